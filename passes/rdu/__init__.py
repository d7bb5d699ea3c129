"""RDU sectioning: the passes and helpers behind `target="rdu"` (docs/rdu.md).

`operators` groups a function's ops by the PyTorch operator they come from, `rules` loads
and matches -o1 fusion rule lists, `cost` is the resource and performance model,
`partition` cuts the operator graph into sections (o0, o1, o3), `sections` rewrites IR
(rdu.section, rdu.hypersection) and outlines it for host emulation; `sectioning` and
`hypersection` are the registered passes.
"""
