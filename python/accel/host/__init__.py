"""The host layer: compiling linalg-on-tensors MLIR to native code for this machine and
running it. The cpu target is this layer plus AOT libraries and artifacts; the emulated
targets (rdu, mncore, nvgpu's host fallback and emulation) run their programs through it.

`pipelines` (MLIR pipelines as data, a why per entry), `compile` (`compile_mlir`: runs them,
translates to LLVM IR), `signatures` (the function boundary, from MLIR), `abi` (trampolines,
soft-float helpers: LLVM IR text), `jit` (linking with MCJIT through `accel.llvm`, compile
cache entries), `parallel` (the fork-join runtime), `vecmath` (libmvec).
"""
