"""Data parallel training: gradients summed across the processes of a torch.distributed group.

With `data_parallel=True` (SambaFlow's `--data-parallel -ws N`), each of N processes runs the
same compiled train step on its own 1/N of the batch; between the compiled backward and
optimizer graphs the step sums the gradients across the processes with one
`torch.distributed.all_reduce` on a single flat buffer (one message, not one per
parameter), and the optimizer graph multiplies them by 1/N (with gradient accumulation,
1/(N*k)). Every process then applies the same update to the same parameters, so all end
where one process given the whole batch would (for a loss that is a mean over the batch).

The group is whatever the caller initialised (`torch.distributed.init_process_group`: gloo
on CPU, the backend is the group's); under `torchrun` (RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set) a step's first call initialises the default group itself, with gloo.
accel does not start processes. BatchNorm running
statistics stay per replica, as with DDP without SyncBatchNorm. docs/training.md has a
`torchrun` recipe and `accel-run-dp`.
"""

from __future__ import annotations

import os
from typing import Any

from accel.diagnostics import AccelError


def world_size(expected: int | None = None) -> int:
    """The initialised group's size; `AccelError` without a group or if it is smaller than
    `expected` (the `world_size` option: SambaFlow's -ws is "the minimum number of
    application replicas"; the number launched is decided at run time)."""
    import torch.distributed as dist

    if dist.is_available() and not dist.is_initialized() and _launched():
        dist.init_process_group(backend="gloo")  # torchrun's environment (env://)
    if not dist.is_available() or not dist.is_initialized():
        raise AccelError("data_parallel=True needs an initialised torch.distributed process "
                         "group (torch.distributed.init_process_group, or run the script "
                         "under torchrun)")
    size = dist.get_world_size()
    if expected is not None and size < expected:
        raise AccelError(f"option world_size={expected} (the minimum number of replicas, "
                         f"-ws), but the torch.distributed group has only {size} processes")
    return size


def _launched() -> bool:
    """Whether a launcher (torchrun) set the env:// rendezvous variables."""
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def check_group(expected: int | None) -> None:
    """At compile time: if a group is initialised already, it must have at least `expected`
    processes (a step compiled without one, e.g. by accel-compile, checks at its first
    call)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        world_size(expected)


def all_reduce_sum(tensors: list[Any]) -> None:
    """Sum `tensors` across the group, in place, with one all-reduce of a flat buffer."""
    import torch
    import torch.distributed as dist

    if len(tensors) == 1:
        dist.all_reduce(tensors[0])
        return
    flat = torch.cat([t.reshape(-1) for t in tensors])
    dist.all_reduce(flat)
    offset = 0
    for t in tensors:
        n = t.numel()
        t.copy_(flat[offset:offset + n].view_as(t))
        offset += n
