"""`rdu-sectioning` and `rdu-hypersection`: cut functions into RDU sections.

Why: an RDU runs one section at a time, a subgraph pipelined over the PCUs and PMUs it
occupies (dialects/rdu.py). SambaFlow's graph compiler picks sections by level: -o0 one
PyTorch operator each, -o1 fusion rules, -o3 as few as fit the chip. This pass does the
same on linalg on tensors, using each op's torch operator from its location
(`accel.frontend.provenance`); docs/rdu.md describes the flags and the cost model.

    func.func @f(%x: tensor<2x8xf32>) -> tensor<2x16xf32> {
      %0 = linalg.matmul ... loc(<torch.op linear>)
      %1 = linalg.generic ... loc(<torch.op gelu>)
      return %1
    }
      -> (level=o0)
    func.func @f(%x: tensor<2x8xf32>) -> tensor<2x16xf32> {
      %0 = "rdu.section"(%x, %w) ({ ... linalg.matmul ... "rdu.yield" }) {sym_name = "s0_linear",
             index = 0, phase = "forward", pcus = 1, pmus = 3, rdu.ops = ["linear:l1"], ...}
      %1 = "rdu.section"(%0) ({ ... }) {sym_name = "s1_gelu", index = 1, ...}
      return %1
    }

Weights (`memref.get_global` + `bufferization.to_tensor`) stay in the function and enter
sections as operands; constants are cloned into each section that uses them. Each section
carries its estimate (`pcus`, `pmus`, `rdu.est_us`), its operators (`rdu.ops`) and, with
`hypersections`, the repeated module instance it belongs to (`rdu.instance`), which
`rdu-hypersection` folds into `rdu.hypersection`s. A section that does not fit the chip
(times the forward scaling factor) fails the pass with the section and the numbers.
Functions without provenance in their locations are cut per op (level o0/o1) or by
resources (o3). Every section is in `phase` (compiled training cuts its forward, backward
and optimizer graphs with phase forward, backward, optimizer: accel.training) and fits that
phase's share of the chip; with `norm-result=K` the operators that compute the function's
result K (the optimizer graph's total gradient norm, clip_grad_norm) form `grad_norm`
sections of their own, scaled by the gradient-normalization factor.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.diagnostics import AccelError
from accel.dialects import rdu
from accel.dialects.rdu_arch import (
    ARCHS,
    PHASES,
    Arch,
    lookup_arch,
    parse_scaling_factors,
    resource_limit,
    scaling_factors_error,
)
from accel.ir import Operation, ir
from accel.passes.base import ModulePass, register_pass
from accel.passes.rdu import operators, partition, sections
from accel.passes.rdu.rules import Rule

LEVELS = ("o0", "o1", "o3")


def _annotated_instance(operator: operators.Operator) -> str | None:
    """The innermost module or `with` block annotated as a hypersection, if any."""
    prov = operator.prov
    if prov is None:
        return None
    for mark in prov.annotations:
        if mark.startswith("hypersection"):
            return mark.split(":", 1)[-1] or "hypersection"
    for module in reversed(prov.modules):
        if "hypersection" in module.annotations:
            return module.path or "model"
    return None


@register_pass
@dataclass(frozen=True)
class Sectioning(ModulePass):
    """Cuts functions into rdu.section ops by PyTorch operator (o0, o1 rules, o3 fit)."""

    name = "rdu-sectioning"
    #: o0 (one operator per section), o1 (rule list), o3 (fewest sections that fit).
    level: str = "o3"
    #: -o1 rule list: a shipped name or a YAML path.
    rule_list: str = "default"
    #: RDU architecture (dialects/rdu_arch.py).
    arch: str = "sn40l"
    #: --resources-scaling-factors, e.g. "1,0.8,0.8" ('' = the whole chip).
    scaling: str = ""
    #: --compiler-mode nlp: o3 cuts at repeated-module (layer) boundaries.
    nlp: bool = False
    #: Tag sections with their repeated module instance (o0/o1) or annotated instance
    #: (o3, which then also cuts at annotated boundaries) for rdu-hypersection.
    hypersections: bool = False
    #: The phase of every section (compiled training: forward, backward, optimizer).
    phase: str = "forward"
    #: Result of each function whose computation forms `grad_norm` sections (-1: none).
    norm_result: int = -1
    #: -o3: at least this many sections (one pipeline stage per chip of --n-chips).
    stages: int = 1
    #: --mac-human-decision: a JSON file whose "sections" entries are applied first.
    decisions: str = ""
    #: Sectioning one phase graph of a train step: decision names may carry the phase
    #: (`backward.s3_linear`) and entries that match nothing are left to other phases.
    train_phase: bool = False
    #: --num-spatial-batches: the batch streams through each section in this many parts.
    spatial_batches: int = 1
    #: --mac-v2 (the legacy compiler): at -o0/-o1 a view rides along with its producer.
    legacy: bool = False

    def apply(self, module: Operation) -> None:
        if self.level not in LEVELS:
            self.fail(module, f"level must be one of {', '.join(LEVELS)}, got '{self.level}'")
        if self.phase not in PHASES:
            self.fail(module, f"phase must be one of {', '.join(PHASES)}, got '{self.phase}'")
        arch = lookup_arch(self.arch)
        if arch is None:
            self.fail(module, f"unknown RDU architecture '{self.arch}' (known: "
                              f"{', '.join(ARCHS)})")
        factors: tuple[float, ...] | None = None
        if self.scaling:
            problem = scaling_factors_error(self.scaling)
            if problem:
                self.fail(module, f"scaling {problem}, got '{self.scaling}'")
            factors = parse_scaling_factors(self.scaling)
        if self.stages < 1 or self.spatial_batches < 1:
            self.fail(module, "stages and spatial-batches must be at least 1")
        decisions = None
        if self.decisions:
            from accel.passes.rdu.decisions import load

            try:
                decisions = load(self.decisions)
            except AccelError as err:
                self.fail(module, str(err))
        rules = None
        if self.level == "o1":
            try:
                rules = partition_rules(self.rule_list)
            except AccelError as err:
                self.fail(module, str(err))
        with module.location:  # FloatAttr.get needs one for its diagnostics
            rdu.set_target(module, arch.name, list(factors) if factors else None)
        limits = {phase: (resource_limit(arch, "pcus", phase, factors),
                          resource_limit(arch, "pmus", phase, factors)) for phase in PHASES}
        matched: set[str] = set()
        labels: list[str] = []
        for op in list(module.regions[0].blocks[0].operations):
            fn = op.operation
            if fn.name == "func.func" and fn.regions[0].blocks:
                try:
                    # Block arguments of new sections need a location: the function's.
                    with fn.location:
                        self._check_batch(fn)
                        self._cut(fn, arch, limits, rules, decisions, matched, labels)
                except AccelError as err:
                    self.fail(fn, str(err))
        if decisions is not None and not self.train_phase:
            from accel.passes.rdu.decisions import unmatched

            try:
                unmatched(decisions, matched, labels)
            except AccelError as err:
                self.fail(module, str(err))

    def _check_batch(self, fn: Operation) -> None:
        """--num-spatial-batches must divide the batch (dim 0 of every ranked argument)."""
        if self.spatial_batches == 1:
            return
        name = fn.attributes["sym_name"].value
        for k, arg in enumerate(fn.regions[0].blocks[0].arguments):
            t = arg.type
            if isinstance(t, ir.ShapedType) and t.has_rank and t.rank and \
                    t.shape[0] >= 0 and t.shape[0] % self.spatial_batches:
                raise AccelError(f"num_spatial_batches={self.spatial_batches} does not divide "
                                 f"the batch size {t.shape[0]} (dim 0 of argument {k} of "
                                 f"@{name})")

    def _fixed(self, graph: operators.Graph, decisions: object, matched: set[str],
               seen: list[str]) -> list[partition.Group]:
        """The human decisions' sections of this graph, checked for convexity; records
        the entries that matched (`matched`) and the operators seen (`seen`)."""
        from accel.passes.rdu.decisions import claim

        if decisions is None:
            return []
        labels = [o.label for o in graph.operators]
        seen += labels
        found = []
        for name, members, where in claim(decisions, labels,  # type: ignore[arg-type]
                                          self.phase if self.train_phase else None):
            matched.add(where)
            if not partition.convex(graph, set(members)):
                raise AccelError(f"{self.decisions}: {where}: section '{name}' is not "
                                 "convex: a data path leaves it and comes back (add the "
                                 "operators in between)")
            found.append(partition.Group(sorted(members), name, fixed=True))
        return found

    def _cut(self, fn: Operation, arch: Arch, limits: dict[str, tuple[int, int]],
             rules: list[Rule] | None, decisions: object = None,
             matched: set[str] | None = None, seen: list[str] | None = None) -> None:
        graph = operators.build(fn)
        if not graph.operators:
            return
        norm = norm_slice(graph, fn, self.norm_result)
        fixed = self._fixed(graph, decisions, set() if matched is None else matched,
                            [] if seen is None else seen)
        spatial = self.spatial_batches

        def phase_of(i: int) -> str:
            return "grad_norm" if i in norm else self.phase

        annotated = self.hypersections and self.level == "o3"
        if self.level == "o0":
            groups = partition.by_operator(graph, ride_along=self.legacy, fixed=fixed)
        elif self.level == "o1":
            groups = partition.by_rules(graph, rules or [], ride_along=self.legacy,
                                        fixed=fixed)
        else:
            # Sections never mix phases: each is sized by its own phase's scaling factor.
            def boundary(i: int) -> tuple[str, str | None]:
                return phase_of(i), (_annotated_instance(graph.operators[i]) if annotated
                                     else None)

            groups = partition.by_resources(graph, arch, *limits[self.phase], nlp=self.nlp,
                                            boundary=boundary,
                                            limits_of=lambda i: limits[phase_of(i)],
                                            fixed=fixed, stages=self.stages, spatial=spatial)
        block = fn.regions[0].blocks[0]
        for index, group in enumerate(groups):
            ops = partition.group_ops(graph, group.operators)
            est = partition.estimate_group(graph, group.operators, arch, spatial)
            name = f"s{index}_{group.label}"
            phase = "grad_norm" if norm and all(i in norm for i in group.operators) \
                else self.phase
            pcu_limit, pmu_limit = limits[phase]
            if not est.fits(pcu_limit, pmu_limit):
                members = ", ".join(graph.operators[i].label for i in group.operators)
                raise AccelError(f"section {name} ({members}) needs {est.pcus} PCUs and "
                                 f"{est.pmus} PMUs but a {phase} section may use {pcu_limit} "
                                 f"PCUs and {pmu_limit} PMUs on {arch.name}; use -o3 or larger "
                                 "--resources-scaling-factors")
            attrs = {
                "phase": ir.StringAttr.get(phase),
                "pcus": rdu._i64(est.pcus), "pmus": rdu._i64(est.pmus),
                sections.EST_ATTR: ir.FloatAttr.get(ir.F64Type.get(), round(est.est_us, 4)),
                sections.STAGES_ATTR: rdu._i64(est.stages),
                sections.LABEL_ATTR: ir.StringAttr.get(group.label),
                sections.OPS_ATTR: ir.ArrayAttr.get([ir.StringAttr.get(
                    graph.operators[i].label) for i in group.operators]),
            }
            if self.hypersections:
                keys = {(_annotated_instance(graph.operators[i]) if annotated else
                         partition.repeated_instance(graph.operators[i].modules))
                        for i in group.operators}
                if len(keys) == 1 and None not in keys:
                    attrs[sections.INSTANCE_ATTR] = ir.StringAttr.get(keys.pop())
            sections.form_section(block, ops, graph.free, name=name, index=index,
                                  attributes=attrs, buffers=True)
        sections.erase_dead_free(block, graph.free)


def norm_slice(graph: operators.Graph, fn: Operation, result: int) -> set[int]:
    """The operators that `fn`'s result number `result` depends on (none for -1 or a
    result that does not exist)."""
    if result < 0:
        return set()
    ret = list(fn.regions[0].blocks[0].operations)[-1].operation
    if result >= len(ret.operands):
        return set()
    src = operators.defining_op(ret.operands[result])
    todo = [graph.owner[src]] if src in graph.owner else []
    found: set[int] = set()
    while todo:
        i = todo.pop()
        if i not in found:
            found.add(i)
            todo.extend(graph.operators[i].preds)
    return found


def partition_rules(name: str) -> list[Rule]:
    from accel.passes.rdu.rules import load_rules

    return load_rules(name)


@register_pass
@dataclass(frozen=True)
class Hypersections(ModulePass):
    """Folds identical runs of sections of repeated modules into rdu.hypersection ops."""

    name = "rdu-hypersection"

    def apply(self, module: Operation) -> None:
        for op in list(module.regions[0].blocks[0].operations):
            fn = op.operation
            if fn.name == "func.func" and fn.regions[0].blocks:
                block = fn.regions[0].blocks[0]
                with fn.location:
                    sections.fold_hypersections(module, block)
                    sections.renumber(block, module)
