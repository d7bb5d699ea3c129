"""accel's one llvmlite layer: `engine` (init, parse, target machines, optimise) and
`normalize` (newer LLVM IR syntax -> what llvmlite's parser reads)."""
