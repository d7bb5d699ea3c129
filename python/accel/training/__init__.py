"""Compiled training: `accel.compile_train_step` and the `TrainStep` it returns.

Modules: `graphs` (the joint forward+backward trace, split into phase graphs), `optimizers`
(SGD/Adam/AdamW as functional torch code, hyper-parameters as runtime inputs), `step` (the
callable: runs the compiled graphs, writes parameters, buffers and optimizer state back),
`distributed` (data parallel gradient averaging), `rng` (dropout and other random ops as a
counter-based generator keyed from torch's generator), `compile` (the entry point), `artifact`
(train-step folders for accel-compile and `accel.load`). docs/training.md is the user guide.
"""
