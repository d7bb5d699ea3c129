"""Calling compiled host code from Python: dtypes, signatures, descriptors, the call path.

`accel.runtime.dtypes` (MLIR scalar types <-> numpy), `accel.runtime.signature` (what a
function takes and returns, memref descriptors, their JSON form), `accel.runtime.call`
(argument packing, owning result arrays, the fast call path, `CompiledFunction`),
`accel.runtime.symbols` (libc and accel's own symbols compiled code calls),
`accel.runtime.weights` (binding external weights, saving them to artifact folders).
"""
