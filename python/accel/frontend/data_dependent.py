"""Data-dependent output shapes: boolean masks, `nonzero`, `unique`, `masked_select`.

`x[x > 0]`, `torch.masked_select`, `torch.unique` and friends return as many elements as
the data selects. `torch.export` gives such a result an unbacked size (`u0`); torch-mlir's
lowerings of these ops either do not exist (`masked_select`, `_unique2`), compute wrong
types ("'arith.cmpi' op requires all operands to have the same type": `aten.index.Tensor`
with a 1-d mask) or never end (a 2-d mask). accel rewrites them before torch-mlir sees them:

- `rewrite_masked_reductions` (on the exported graph, before decompositions): a reduction of
  a masked selection whose result does not depend on the selection's size,
  `x[mask].sum()` / `.mean()` / `.prod()`, becomes `where(mask, x, 0).sum()` (identity
  elements 0 and 1; mean divides by `mask.sum()`): no data-dependent shape at all.
- `decompositions()` (added to `accel.frontend.decompositions`): every other case computes
  at an upper bound and cuts the result at run time. `_ranked(mask)` scatters the index of
  each true entry to its rank (a cumulative sum) in a buffer of `mask.numel()` slots,
  `_positions` adds the true count (`.item()`: a runtime size); the op (`x[mask]`,
  `masked_select`, `nonzero`, `unique`) then gathers (`index_select`) at the padded
  positions and `narrow`s to the count, which lowers to a `tensor.extract_slice` of dynamic
  size: the compiled function returns a tensor of the true size, as eager does.
  `x[mask] = v` and `nonzero_static` keep static shapes (a `where`; a fill past the count).

      %pos  = scatter(zeros(N + 1), where(mask, cumsum(mask) - 1, N), arange(N))[:N]
      %n    = mask.sum().item()                 -- runtime size, 0 <= n <= N checked
      %out  = x.reshape(N, ...).index_select(0, %pos).narrow(0, 0, %n)

- `check_data_dependent` (after decompositions): any op still producing a data-dependent
  size that accel does not lower (`unique(dim=...)`, `repeat_interleave` by a tensor, a
  mask mixed with integer index tensors, ...) is one `AccelError` naming the op and the
  model's source line, instead of reaching torch-mlir.
"""

from __future__ import annotations

import re
from typing import Any

from accel.diagnostics import AccelError

_MASK_DTYPES = ("bool", "uint8")


def _is_mask(index: Any) -> bool:
    return index is not None and str(index.dtype).removeprefix("torch.") in _MASK_DTYPES


def _ranked(flat: Any) -> Any:
    """int64[N]: the indices of the true entries of a 1-d bool tensor `flat` of N entries,
    first and in order (each scattered to its rank, a cumulative sum), padded with 0."""
    import torch

    total = flat.shape[0]
    rank = torch.cumsum(flat.to(torch.int64), 0) - 1
    slot = torch.where(flat, rank, total)  # false entries all land in the dropped last slot
    buffer = torch.zeros(total + 1, dtype=torch.int64)
    return buffer.scatter(0, slot, torch.arange(total, dtype=torch.int64))[:total]


def _positions(flat: Any) -> tuple[Any, Any]:
    """(`_ranked(flat)`, the number of true entries: a runtime size)."""
    import torch

    count = flat.to(torch.int64).sum().item()
    torch._check(count >= 0)
    torch._check(count <= flat.shape[0])
    return _ranked(flat), count


def _single_mask(indices: Any) -> tuple[int, Any] | None:
    """(position, mask) when `indices` is one bool/uint8 mask among `None`s, else None."""
    given = [(p, i) for p, i in enumerate(indices) if i is not None]
    if len(given) != 1 or not _is_mask(given[0][1]):
        return None
    return given[0][0], given[0][1]


def _check_mask(x: Any, p: int, mask: Any) -> None:
    """Eager's IndexError for a mask whose shape is not that of the dims it indexes (fake
    tensors do not check it while exporting), as an `AccelError` at the model's line."""
    dims = list(x.shape[p:p + mask.dim()])
    if list(mask.shape) == dims:
        return
    from torch.fx.traceback import get_current_meta

    file, line = source_line(get_current_meta() or {})
    where = f" at {file}:{line}" if file else ""
    raise AccelError(f"boolean mask{where}: the mask's shape {list(mask.shape)} does not match "
                     f"the shape {dims} of the dims it indexes (from dim {p})",
                     file=file, line=line)


def _index(x: Any, indices: Any) -> Any:
    """`x[..., mask, ...]` (one mask, the other dims whole): gather at the mask's padded
    positions, cut to the true count."""
    import torch

    found = _single_mask(indices)
    if found is None:
        return NotImplemented
    p, mask = found
    _check_mask(x, p, mask)
    k = mask.dim()
    shape = list(x.shape)
    flat = x.reshape([*shape[:p], -1, *shape[p + k:]])
    positions, count = _positions(mask.to(torch.bool).reshape(-1))
    return flat.index_select(p, positions).narrow(p, 0, count)


def _index_put(x: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:
    """`x[mask] = values` (one mask, the other dims whole) as a `where`: the value of each
    selected entry is the same for all (a scalar, a row broadcast to every selected entry),
    or the `rank`-th row of `values` (one row per selected entry), gathered at each entry's
    rank among the selected ones. Nothing has a data-dependent shape but `values`."""
    import torch

    found = _single_mask(indices)
    if found is None:
        return NotImplemented
    p, mask = found
    _check_mask(x, p, mask)
    mask = mask.to(torch.bool)
    k = mask.dim()
    shape = list(x.shape)
    rest = shape[p + k:]
    indexed = p + 1 + len(rest)  # rank of x[mask]: the mask's dims become one
    values = values.to(x.dtype)
    if values.dim() > indexed:
        return NotImplemented
    aligned = [1] * (indexed - values.dim()) + list(values.shape)
    where = mask.reshape([*([1] * p), *mask.shape, *([1] * len(rest))])
    if isinstance(aligned[p], int) and aligned[p] == 1:  # one value for every entry
        per_entry = values.reshape([*aligned[:p], *([1] * k), *aligned[p + 1:]])
    else:
        flat = mask.reshape(-1)
        count = flat.to(torch.int64).sum().item()
        torch._check(count >= 0)
        torch._check(count <= flat.shape[0])
        torch._check(aligned[p] == count)
        rows = values.reshape(aligned).expand([*shape[:p], count, *rest]).movedim(p, 0)
        # One spare row, so that the unselected entries (rank 0) gather in bounds when
        # nothing is selected.
        rows = torch.cat([rows, torch.zeros_like(rows[:1])])
        rank = torch.where(flat, torch.cumsum(flat.to(torch.int64), 0) - 1, 0)
        per_entry = rows.index_select(0, rank).movedim(0, p).reshape(
            [*shape[:p], *mask.shape, *rest])
    if accumulate:
        return x + torch.where(where, per_entry, torch.zeros((), dtype=x.dtype))
    return torch.where(where, per_entry, x)


def _coordinates(positions: Any, shape: list[int]) -> Any:
    """Flat positions (int64[N]) as coordinates in `shape` (int64[N, len(shape)])."""
    import torch

    coords = []
    stride = 1
    for size in reversed(shape):
        coords.append(torch.remainder(torch.div(positions, stride, rounding_mode="floor"), size))
        stride *= size
    if not coords:  # a 0-d tensor: rows of no coordinates
        return positions.reshape(-1, 1)[:, :0]
    return torch.stack(coords[::-1], dim=1)


def _nonzero(x: Any) -> Any:
    """`torch.nonzero(x)` (also `argwhere`, `nonzero(as_tuple=True)`): the padded flat
    positions unravelled into coordinates, one row per non-zero entry."""
    if x.is_complex():
        return NotImplemented
    positions, count = _positions((x != 0).reshape(-1))
    return _coordinates(positions, list(x.shape)).narrow(0, 0, count)


def _nonzero_static(x: Any, *, size: int, fill_value: int = -1) -> Any:
    """`torch.nonzero_static(x, size=...)`: `size` rows, those past the count filled."""
    import torch

    if x.is_complex() or not isinstance(size, int):
        return NotImplemented
    flat = (x != 0).reshape(-1)
    coords = _coordinates(_ranked(flat), list(x.shape))
    total = flat.shape[0]
    if size > total:
        coords = torch.cat([coords, coords.new_zeros((size - total, coords.shape[1]))])
    coords = coords[:size]
    kept = torch.arange(size) < flat.to(torch.int64).sum()
    return torch.where(kept.reshape(-1, 1), coords, fill_value)


def _masked_select(x: Any, mask: Any) -> Any:
    """`torch.masked_select(x, mask)`: both broadcast, then gathered at the true entries."""
    import torch

    x, mask = torch.broadcast_tensors(x, mask.to(torch.bool))
    positions, count = _positions(mask.reshape(-1))
    return x.reshape(-1).index_select(0, positions).narrow(0, 0, count)


def _runs(flat: Any, order: Any, return_inverse: bool, return_counts: bool,
          shape: Any) -> tuple[Any, Any, Any]:
    """unique's three results from `flat` (1-d, equal values adjacent) and `order` (the
    permutation that produced it from the input, or None): the first of each run of equal
    values, each input's run number, each run's length."""
    import torch

    total = flat.shape[0]
    first = torch.cat([torch.ones(1, dtype=torch.bool), flat[1:] != flat[:-1]])
    positions, count = _positions(first)
    values = flat.index_select(0, positions).narrow(0, 0, count)
    run = torch.cumsum(first.to(torch.int64), 0) - 1
    inverse = torch.zeros(0, dtype=torch.int64)
    if return_inverse:
        inverse = run if order is None else torch.zeros(total, dtype=torch.int64).scatter(
            0, order, run)
        inverse = inverse.reshape(shape)
    counts = torch.zeros(0, dtype=torch.int64)
    if return_counts:
        counts = torch.zeros(total, dtype=torch.int64).scatter_add(
            0, run, torch.ones(total, dtype=torch.int64)).narrow(0, 0, count)
    return values, inverse, counts


def _unique2(x: Any, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
             return_counts: bool = False) -> Any:
    """`torch.unique(x)` without `dim`: sorted (eager sorts on the CPU for either value of
    `sorted`), NaNs last, each its own value, as in eager."""
    import torch

    if x.numel() == 0 or x.dtype == torch.bool or x.is_complex():
        return NotImplemented
    flat = x.reshape(-1)
    if not x.is_floating_point():
        values, order = torch.sort(flat)
        return _runs(values, order, return_inverse, return_counts, x.shape)
    # torch-mlir's sort leaves NaNs anywhere, eager's puts them last: sort them as +inf,
    # then move them behind the infinities (a stable partition of the sorted order).
    nan = torch.isnan(flat)
    _, order = torch.sort(torch.where(nan, torch.inf, flat))
    late = nan.index_select(0, order)
    ones = late.to(torch.int64)
    first_nan = flat.shape[0] - ones.sum()
    slot = torch.where(late, first_nan + torch.cumsum(ones, 0) - 1, torch.cumsum(1 - ones, 0) - 1)
    order = torch.zeros_like(order).scatter(0, slot, order)
    return _runs(flat.index_select(0, order), order, return_inverse, return_counts, x.shape)


def _unique_consecutive(x: Any, return_inverse: bool = False, return_counts: bool = False,
                        dim: Any = None) -> Any:
    """`torch.unique_consecutive(x)` without `dim`."""
    import torch

    if dim is not None or x.numel() == 0 or x.dtype == torch.bool or x.is_complex():
        return NotImplemented
    return _runs(x.reshape(-1), None, return_inverse, return_counts, x.shape)


def decompositions() -> dict[Any, Any]:
    """The upper-bound-and-runtime-size rewrites, by aten overload."""
    import torch

    aten = torch.ops.aten
    return {
        aten.index.Tensor: _index,
        aten.index_put.default: _index_put,
        aten.masked_select.default: _masked_select,
        aten.nonzero.default: _nonzero,
        aten.nonzero_static.default: _nonzero_static,
        aten._unique2.default: _unique2,
        aten.unique_consecutive.default: _unique_consecutive,
    }


# -- masked reductions: no data-dependent shape at all ---------------------------------------
def _val(node: Any) -> Any:
    return node.meta.get("val") if hasattr(node, "meta") else None


def _reduction(user: Any, source: Any, mask_rank: int, x_rank: int
               ) -> tuple[str, list[int] | None] | None:
    """(kind, dims of the `where` to reduce; None: all) when `user` is a reduction of
    `source` = `x[mask]` whose result does not depend on how many entries are selected:
    `.sum()`, `.mean()`, `.prod()` of everything, or `.sum(0)` over the selected entries."""
    import torch

    aten = torch.ops.aten
    args, kwargs = user.args, user.kwargs
    if not args or args[0] is not source:
        return None
    if user.target in (aten.sum.default, aten.mean.default, aten.prod.default):
        kind = user.target.__name__.split(".")[0]
        return (kind, None) if kind == "sum" or mask_rank == x_rank else None
    if user.target is not aten.sum.dim_IntList:
        return None
    dims = args[1] if len(args) > 1 else kwargs.get("dim")
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if keepdim:
        return None
    if dims is None or list(dims) == []:
        return "sum", None
    if list(dims) in ([0], [-(x_rank - mask_rank + 1)]):  # over the selected entries
        return "sum", list(range(mask_rank))
    return None


def _size_checks(node: Any) -> list[Any] | None:
    """The nodes that only check `node`'s data-dependent size (`sym_size` and the
    `_assert_scalar`s torch.export adds for 0 <= u0 <= N), or None if a user needs more."""
    import operator

    import torch

    found = []
    for user in node.users:
        if user.target is not torch.ops.aten.sym_size.int:
            return None
        found.append(user)
        for compare in user.users:
            if compare.target not in (operator.ge, operator.le):
                return None
            found.append(compare)
            for check in compare.users:
                if check.target is not torch.ops.aten._assert_scalar.default:
                    return None
                found.append(check)
    return found


def rewrite_masked_reductions(exported: Any) -> int:
    """Rewrite `x[mask].sum()`, `.mean()`, `.prod()` and `x[mask].sum(0)` (`mask` over `x`'s
    leading dims) into reductions of `where(mask, x, identity)`, in place; the number of
    selections rewritten."""
    import torch

    aten = torch.ops.aten
    graph = exported.graph_module.graph
    rewritten = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.index.Tensor:
            continue
        x, indices = node.args[0], node.args[1]
        if len(indices) != 1 or indices[0] is None or not _is_mask(_val(indices[0])):
            continue
        mask, x_val, mask_val = indices[0], _val(x), _val(indices[0])
        if x_val is None or list(x_val.shape[:mask_val.dim()]) != list(mask_val.shape):
            continue
        reductions = [(u, _reduction(u, node, mask_val.dim(), x_val.dim()))
                      for u in node.users if u.target is not aten.sym_size.int]
        if not reductions or any(how is None for _, how in reductions):
            continue
        for user, how in reductions:
            _replace_reduction(graph, user, x, mask, mask_val, x_val, *how)
        checks = _size_checks(node)
        for dead in reversed(checks or []):
            graph.erase_node(dead)
        if not node.users:
            graph.erase_node(node)
        rewritten += 1
    if rewritten:
        graph.lint()
        exported.graph_module.recompile()
    return rewritten


def _replace_reduction(graph: Any, user: Any, x: Any, mask: Any, mask_val: Any, x_val: Any,
                       kind: str, dims: list[int] | None) -> None:
    """Replace reduction `user` of `x[mask]` by the same reduction of a `where`."""
    import torch

    aten = torch.ops.aten
    dtype = user.kwargs.get("dtype")
    with graph.inserting_before(user):
        where_mask = mask
        if mask_val.dim() != x_val.dim():  # a mask over the leading dims: broadcast it
            where_mask = graph.call_function(
                aten.reshape.default,
                (mask, [*mask_val.shape, *([1] * (x_val.dim() - mask_val.dim()))]))
        where_mask = graph.call_function(aten.to.dtype, (where_mask, torch.bool))
        identity = 1 if kind == "prod" else 0
        filler = graph.call_function(aten.scalar_tensor.default, (identity,),
                                     {"dtype": x_val.dtype})
        kept = graph.call_function(aten.where.self, (where_mask, x, filler))
        if kind == "mean":
            total = graph.call_function(aten.sum.default, (kept,))
            count = graph.call_function(aten.sum.default, (where_mask,), {"dtype": x_val.dtype})
            new = graph.call_function(aten.div.Tensor, (total, count))
        elif dims is not None:
            new = graph.call_function(aten.sum.dim_IntList, (kept, dims),
                                      {"dtype": dtype} if dtype else {})
        else:
            op = aten.prod.default if kind == "prod" else aten.sum.default
            new = graph.call_function(op, (kept,), {"dtype": dtype} if dtype else {})
    new.meta.update({k: v for k, v in user.meta.items() if k != "val"})
    new.meta["val"] = _val(user)
    user.replace_all_uses_with(new)
    graph.erase_node(user)


# -- what is left: one clear error -----------------------------------------------------------
#: Ops that create a runtime size accel lowers (the rewrites' `.item()`).
_SIZE_SOURCES = ("aten._local_scalar_dense.default", "aten.item.default")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def source_line(meta: Any) -> tuple[str | None, int | None]:
    """The innermost frame of a node's stack trace (`meta`: the node or its meta dict) that
    is not torch's: (file, line), or (None, None)."""
    meta = getattr(meta, "meta", meta)
    frames = _FRAME.findall(meta.get("stack_trace") or "")
    for file, line in reversed(frames):
        if "/torch/" not in file and not file.startswith("torch.op:"):
            return file, int(line)
    return None, None


def check_data_dependent(exported: Any, name: str) -> None:
    """Raise one `AccelError` for the first op of the decomposed program whose output size
    depends on the data and that accel cannot lower (naming the op and its source line)."""
    import torch

    aten = torch.ops.aten
    for node in exported.graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        target = str(node.target)
        why = None
        if node.target in (aten.index.Tensor, aten.index_put.default) and any(
                _is_mask(_val(i)) for i in node.args[1] if i is not None):
            why = ("a boolean mask together with other index tensors (accel supports one "
                   "mask with whole dims, x[mask] or x[:, mask])")
        elif node.meta.get("unbacked_bindings") and target not in _SIZE_SOURCES:
            why = "its output size depends on the data, and accel has no lowering for it"
        if why is None:
            continue
        op = (node.meta.get("original_aten") or node.target)
        op = str(op).removesuffix(".default")
        file, line = source_line(node)
        where = f" at {file}:{line}" if file else ""
        raise AccelError(f"{name}: unsupported data-dependent op {op}{where}: {why}",
                         file=file, line=line)
