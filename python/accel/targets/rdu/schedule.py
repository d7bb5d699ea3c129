"""The section schedule of a sectioned module, as the chip runs it.

`read_schedule` walks the entry functions' top-level `rdu.section`s in order. A
hypersection instance (an empty section naming `@h`) runs the sections of `h`'s body one
after another, so it is listed as those sections: each keeps its own index and name
(`s<index>_<label>`, numbered through by `rdu-hypersection`), its operators in this
instance (`rdu.inner_ops`), and says which instance it belongs to, which body section it
runs (`s<k>_<label>` in `h`) and whether that body was already compiled for an earlier
instance (`reused`). -o0 thus stays one operator per section with hypersections.

`edges`: every tensor one listed section reads from another (producer, consumer, bytes,
and a key naming the tensor), through hypersection bodies: what crosses chips when the
schedule is split over several (`placement.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from accel.targets.rdu.placement import Edge


@dataclass
class Section:
    """One section as sections.json lists it."""

    name: str
    index: int
    phase: str
    ops: list[str]
    pcu: int
    pmu: int
    hypersection: str | None
    est_us: float
    chip: int = 0
    transfer_us: float = 0.0
    #: The hypersection instance this section runs a body section of (module path).
    instance: str | None = None
    #: The body section it runs (`s<k>_<label>` inside the hypersection).
    body: str | None = None
    #: Whether it reuses a body already compiled for an earlier instance.
    reused: bool = False
    #: Pipeline stages (compute ops) of the section: the cost model's fill term.
    stages: int = 1
    #: --model-parallel: shard k of `shards` of a split GEMM section.
    shard: int | None = None
    shards: int = 1

    def to_json(self) -> dict[str, Any]:
        data = {"name": self.name, "index": self.index, "phase": self.phase, "ops": self.ops,
                "pcu": self.pcu, "pmu": self.pmu, "hypersection": self.hypersection,
                "chip": self.chip, "est_us": round(self.est_us, 4),
                "transfer_us": round(self.transfer_us, 4)}
        if self.hypersection:
            data.update(instance=self.instance, body=self.body, reused=self.reused)
        if self.shards > 1:
            data.update(shard=self.shard, shards=self.shards)
        return data


@dataclass
class Schedule:
    sections: list[Section] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    #: hypersection -> its instances (module paths), in run order.
    hypersections: dict[str, list[str]] = field(default_factory=dict)
    #: hypersection -> the names of its body's sections.
    bodies: dict[str, list[str]] = field(default_factory=dict)


def _attr(op: Any, name: str, default: Any = None) -> Any:
    return op.attributes[name].value if name in op.attributes else default


def _labels(attr: Any) -> list[str]:
    return [str(a.value) for a in attr] if attr is not None else []


def _owner(value: Any) -> Any:
    owner = value.owner
    return owner.operation if hasattr(owner, "operation") else None


def read_schedule(module: Any) -> Schedule:
    """The schedule of every function of `module` with sections (see the docstring)."""
    from accel.passes.rdu import sections as sec
    from accel.passes.rdu.operators import nbytes

    top = module.regions[0].blocks[0]
    bodies = {_attr(op.operation, "sym_name"): op.operation for op in top.operations
              if op.operation.name == "rdu.hypersection"}
    out = Schedule()
    for name, body in bodies.items():
        out.bodies[name] = [_attr(s, "sym_name")
                            for s in sec.sections_of(body.regions[0].blocks[0])]
    for fn in top.operations:
        if fn.operation.name != "func.func" or not fn.operation.regions[0].blocks:
            continue
        # (top-level section op, result number) -> (listed index producing it, value key)
        produced: dict[tuple[Any, int], tuple[int, object]] = {}
        source = _sources(produced)

        for op in sec.sections_of(fn.operation.regions[0].blocks[0]):
            ref = _attr(op, "hypersection")
            if ref is None:
                me = len(out.sections)
                out.sections.append(Section(
                    _attr(op, "sym_name"), _attr(op, "index", 0), _attr(op, "phase", "forward"),
                    _labels(op.attributes[sec.OPS_ATTR] if sec.OPS_ATTR in op.attributes
                            else None), _attr(op, "pcus", 0), _attr(op, "pmus", 0), None,
                    _attr(op, sec.EST_ATTR, 0.0), stages=_attr(op, sec.STAGES_ATTR, 1)))
                for value in op.operands:
                    found = source(value)
                    if found is not None:
                        out.edges.append(Edge(found[0], me, nbytes(value), found[1]))
                for k in range(len(op.results)):
                    produced[(op, k)] = (me, (me, k))
                continue
            _instance(out, op, ref, bodies[ref], produced, source, nbytes)
    return out


def _sources(produced: dict[tuple[Any, int], tuple[int, object]]) -> Any:
    """A function: (listed index, key) of the section producing a value, or None; through
    a hypersection body's block arguments (`block_args`) to the instance's operands."""
    def source(value: Any, block_args: dict[Any, Any] | None = None) -> Any:
        src = _owner(value)
        if src is None:  # a block argument: an instance's operand, or a function input
            if block_args is not None and value in block_args:
                return source(block_args[value])
            return None
        return produced.get((src, _result_no(src, value)))
    return source


def _result_no(op: Any, value: Any) -> int:
    for k, r in enumerate(op.results):
        if r == value:
            return k
    return 0


def _instance(out: Schedule, op: Any, ref: str, hyper: Any, produced: dict, source: Any,
              nbytes: Any) -> None:
    """List the body sections an instance runs, with the edges into and inside it."""
    from accel.passes.rdu import sections as sec

    body = hyper.regions[0].blocks[0]
    inner = sec.sections_of(body)
    key = _attr(op, sec.INSTANCE_ATTR) or _attr(op, "sym_name")
    members = out.hypersections.setdefault(ref, [])
    reused = bool(members)
    members.append(key)
    per_inner = op.attributes[sec.INNER_OPS_ATTR] if sec.INNER_OPS_ATTR in op.attributes \
        else None
    args = {a: v for a, v in zip(body.arguments, op.operands, strict=True)}
    base = len(out.sections)
    index0 = _attr(op, "index", 0)
    local: dict[tuple[Any, int], tuple[int, object]] = {}
    for p, s in enumerate(inner):
        label = _attr(s, sec.LABEL_ATTR) or _attr(s, "sym_name").split("_", 1)[-1]
        ops = _labels(per_inner[p]) if per_inner is not None and p < len(per_inner) \
            else _labels(s.attributes[sec.OPS_ATTR] if sec.OPS_ATTR in s.attributes else None)
        me = base + p
        out.sections.append(Section(
            f"s{index0 + p}_{label}", index0 + p, _attr(op, "phase", "forward"), ops,
            _attr(s, "pcus", 0), _attr(s, "pmus", 0), ref, _attr(s, sec.EST_ATTR, 0.0),
            instance=key, body=_attr(s, "sym_name"), reused=reused,
            stages=_attr(s, sec.STAGES_ATTR, 1)))
        for value in s.operands:
            src = _owner(value)
            found = local.get((src, _result_no(src, value))) if src is not None \
                else source(value, args)
            if found is not None:
                out.edges.append(Edge(found[0], me, nbytes(value), found[1]))
        for k in range(len(s.results)):
            local[(s, k)] = (me, (me, k))
    terminator = list(body.operations)[-1]
    for k, value in enumerate(terminator.operands):
        src = _owner(value)
        found = local.get((src, _result_no(src, value))) if src is not None \
            else source(value, args)
        if found is not None:
            produced[(op, k)] = found
