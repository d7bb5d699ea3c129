"""The mncore compilation, phase by phase, and the host program's JIT.

Phases (names as in summary.json's compile_statuses and codegen_dir/logs/<phase>.log):
`graph` (the layer graph), `layout` (planning, relayouts), `schedule` (SRAM model, cost),
`precision` (float_dtype applied), `host-compile` (the CPU target), `emit` (codegen_dir).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from accel.diagnostics import AccelError

#: LLVM level of the host emulation: 0, because the emulation is for numerics, not speed:
#: LLVM O0 JITs the 2-layer GPT-2 in 0.15 s where O1 takes 6 s (measured on the 2-core
#: development machine). MLIR-level passes still run.
HOST_OPT_LEVEL = 0


class _Phases:
    """Times and log lines of each phase."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.logs: dict[str, list[str]] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[list[str]]:
        from accel import phases

        log = self.logs.setdefault(name, [])
        start = time.perf_counter()
        ok = False
        try:
            with phases.phase(f"mncore-{name}"):
                yield log
            ok = True
        finally:
            self.rows.append({"phase": name, "ok": ok,
                              "seconds": round(time.perf_counter() - start, 6)})


def _bits_of(graph: Any, float_dtype: str | None) -> dict[str, int]:
    """Element width of each tensor on the device under `float_dtype` (f32 tensors only)."""
    from accel.targets.mncore.graph import GEMMS

    if float_dtype in (None, "float"):
        return {}
    if float_dtype in ("half", "double"):
        bits = 16 if float_dtype == "half" else 64
        return {n: bits for n, v in graph.values.items() if v.bits == 32}
    gemm_values = {n for layer in graph.layers if layer.op_type in GEMMS
                   for n in (*layer.inputs, layer.output)}
    return {n: 16 for n in gemm_values if graph.values[n].bits == 32}


def compile_module(text: str, opts: dict[str, Any], envs: Mapping[str, str], name: str,
                   weights: Mapping[str, np.ndarray]) -> Any:
    """Compile linalg-on-tensors `text` for MN-Core with effective options and envs."""
    from accel.host.signatures import parsed
    from accel.targets.mncore import (
        graph,
        layouts,
        option_json,
        precision,
        reports,
        schedule,
    )
    from accel.targets.mncore.executable import MncoreExecutable

    filename = opts.get("filename", "<input>")
    if opts.get("out_onnx"):
        # accel.compile writes the ONNX file from the torch model (frontend/onnx_export.py)
        # and passes out_onnx=None here; MLIR text has no ONNX exporter.
        raise AccelError(f"option 'out_onnx' ({opts['out_onnx']}): ONNX is written from a "
                         "torch model (accel.compile, accel-compile); MLIR input has none")
    log = _Phases()
    float_dtype = opts.get("float_dtype")
    alarm = schedule.Alarm(envs)
    from accel.targets.mncore.nodesim import NodeSimCache

    nodesim = NodeSimCache(opts.get("node_simulation_cache"))
    with parsed(text, filename, None) as (module, _):
        funcs = [op for op in module.body.operations if _is_public_definition(op)]
        if not funcs:
            raise AccelError(f"{filename}: no public function to compile for mncore")
        func_name = str(funcs[0].attributes["sym_name"]).strip('"')
        with log.phase("graph") as out:
            g = graph.from_function(funcs[0])
            out.append(f"@{func_name}: {len(g.layers)} layers, {len(g.values)} tensors, "
                       f"{g.flops} flops")
        with log.phase("layout") as out:
            specs = layouts.load_specs(opts.get("layout_spec"), opts.get("gemm_layout_spec"),
                                       envs)
            plan = layouts.plan(g, opts["layout_planner"], specs, envs,
                                _bits_of(g, float_dtype))
            out.append(f"planner {plan.planner}: {len(plan.relayouts)} relayouts, "
                       f"{plan.relayout_bytes} bytes")
            out.extend(f"relayout {r[0]} for {r[1]}.{r[2]}: {r[3]} -> {r[4]}"
                       for r in plan.relayouts)
        alarm.check("after layout planning")
        with log.phase("schedule") as out:
            search = _search_space(opts, envs)
            tried = []
            for planner, scheduler in search:
                trial_plan = plan if planner == opts["layout_planner"] else \
                    layouts.plan(g, planner, specs, envs, _bits_of(g, float_dtype))
                trial_cost = schedule.CostModel(g, trial_plan, float_dtype or "float",
                                                opts["simulation_mode"], opts["sram_budget"],
                                                scheduler, envs=envs, nodesim=nodesim)
                found = schedule.schedule(g, trial_cost, scheduler, envs,
                                          opts["sa_expected_run_iters"], alarm)
                tried.append((found.time_s, planner, scheduler, trial_plan, trial_cost, found))
            if len(tried) > 1:
                out.extend(f"search: planner {t[1]} scheduler {t[2]}: {t[0] * 1e6:.3f} us"
                           for t in tried)
            _, planner, scheduler, plan, cost, sched = min(tried, key=lambda t: t[0])
            if len(tried) > 1:
                opts = {**opts, "layout_planner": planner, "scheduler": scheduler}
                out.append(f"search: chose planner {planner}, scheduler {scheduler}")
            nodesim.save()
            out.append(f"scheduler {sched.scheduler}: {sched.time_s * 1e6:.3f} us estimated "
                       f"(simulation_mode {cost.mode}, SA steps {sched.sa_steps} x "
                       f"{sched.sa_runs} iterations, beam turns {sched.beam_turns}, "
                       f"recomputed {len(sched.recomputed)}; node simulations: "
                       f"{nodesim.simulated} simulated, {nodesim.reused} reused)")
            search_rows = [{"layout_planner": t[1], "scheduler": t[2],
                            "time_us": round(t[0] * 1e6, 3)} for t in tried]
        with log.phase("split") as out:
            layered_program = _split(module, funcs[0], g, sched.order, out)
        with log.phase("precision") as out:
            if float_dtype in ("mixed", "half"):
                count = precision.round_to_half(module, gemms_only=float_dtype == "mixed")
                from accel.pipeline import run_pipeline

                run_pipeline(module, "builtin.module(func.func(convert-elementwise-to-linalg))",
                             filename=filename, label="mncore-precision")
                out.append(f"{float_dtype}: {count} tensors rounded through f16")
            program = module.operation.get_asm(enable_debug_info=True)
            if float_dtype == "double":
                program = precision.widen_to_double(program)
                out.append("double: f32 widened to f64")
    with log.phase("host-compile"):
        host, functions = host_compile(program, float_dtype, weights,
                                       cache=bool(opts.get("cache", True)), filename=filename)
        functions = {n: sig for n, sig in functions.items() if not n.startswith("layer_")}
    files = {"l3ir.txt": reports.l3ir(func_name, g, plan, sched, opts, cost.pattern),
             "option.json": option_json.option_file(opts, envs, name)}
    bound = _host_weights(weights, float_dtype)
    if layered_program is not None:
        files["layers.json"] = reports.dumps({"entry": func_name,
                                              **layered_program.to_json()})
    executable = MncoreExecutable(host, functions, bound, float_dtype, program, files,
                                  sched.time_s * 1e6)
    executable.envs = dict(envs)
    executable.transfers = _transfers(g, envs)
    executable.graph_io = {"inputs": [n for n, v in g.values.items() if v.kind == "input"],
                           "outputs": list(g.outputs)}
    summary = reports.summary(g, plan, sched, log.rows, opts)
    summary.update({"sa_runs": sched.sa_runs, "beam_turns": sched.beam_turns,
                    "node_simulation": nodesim.report(), "compile_options_search": search_rows,
                    "gemm_patterns": dict(sorted(cost.pattern.items())),
                    "on_host": [s.name for s in sched.steps if s.on_host],
                    "transfers": executable.transfers})
    files["summary.json"] = reports.dumps(summary)
    if opts.get("codegen_dir"):
        with log.phase("emit"):
            _write_codegen_dir(Path(opts["codegen_dir"]), executable, func_name, g, plan,
                               sched, log, opts, text)
    return executable


def _search_space(opts: Mapping[str, Any], envs: Mapping[str, str]) -> list[tuple[str, str]]:
    """(planner, scheduler) pairs to compile with and keep the fastest of:
    CODEGEN_FIND_BEST_COMPILE_OPTIONS tries every planner with every scheduler ("all
    available strategies"), CODEGEN_FIND_BETTER_COMPILE_OPTIONS the given planner with the
    given scheduler, spill_opt and auto_recompute_sa ("reasonable options"); else only the
    options given."""
    from accel.targets.mncore.layouts import PLANNERS
    from accel.targets.mncore.schedule import SCHEDULERS, flag

    given = (opts["layout_planner"], opts["scheduler"])
    if flag(envs, "CODEGEN_FIND_BEST_COMPILE_OPTIONS"):
        return [given] + [(p, s) for p in PLANNERS for s in SCHEDULERS if (p, s) != given]
    if flag(envs, "CODEGEN_FIND_BETTER_COMPILE_OPTIONS"):
        return list(dict.fromkeys([given, (given[0], "spill_opt"),
                                   (given[0], "auto_recompute_sa")]))
    return [given]


def _transfers(g: Any, envs: Mapping[str, str]) -> dict[str, Any]:
    """What one call moves between host and board (timeline.transfer_seconds): its inputs
    H2D, its outputs D2H, and the weights' first H2D."""
    from accel.targets.mncore import timeline

    def sizes(kind: str) -> list[int]:
        return [v.nbytes for v in g.values.values() if v.kind == kind]

    outs = [g.values[n].nbytes for n in g.outputs]
    return {"h2d_inputs_us": round(timeline.transfer_seconds(sizes("input"), envs) * 1e6, 3),
            "d2h_outputs_us": round(timeline.transfer_seconds(outs, envs) * 1e6, 3),
            "h2d_weights_us": round(timeline.transfer_seconds(sizes("weight"), envs) * 1e6, 3),
            "input_bytes": sum(sizes("input")), "output_bytes": sum(outs),
            "weight_bytes": sum(sizes("weight"))}


def _is_public_definition(op: Any) -> bool:
    """A `func.func` with a body that is not private (what the entry can be)."""
    if op.operation.name != "func.func" or not op.regions[0].blocks:
        return False
    attrs = op.attributes
    return "sym_visibility" not in attrs or str(attrs["sym_visibility"]) != '"private"'


def _split(module: Any, func: Any, g: Any, order: list[str], out: list[str]) -> Any:
    """Append one function per layer to `module` (layered.py); the Program, or None when
    the function cannot be split (then the whole program runs as one call)."""
    from accel.ir import Module
    from accel.targets.mncore import layered

    try:
        text, program = layered.split(func, g, order)
    except AccelError as err:
        out.append(f"not split ({err}): the program runs as one host call")
        return None
    for op in Module.parse("module {\n" + text + "}\n").body.operations:
        module.body.append(op.operation)
    _stub_body(func)
    out.append(f"{len(program.layers)} layer functions, run in schedule order")
    return program


def _stub_body(func: Any) -> None:
    """Replace the entry's body by `tensor.empty` results: the layer functions do its work
    (LayeredCall), the entry only gives the host compile its signature. Lowering the body
    again would double the JIT time (a 2-layer GPT-2: 5.5 -> 2.8 s)."""
    from accel.ir import InsertionPoint, Operation

    block = func.regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    result_types = [v.type for v in ops[-1].operands]
    for op in reversed(ops):
        op.erase()
    ip = InsertionPoint(block)
    empties = [Operation.create("tensor.empty", results=[t], loc=func.location, ip=ip).result
               for t in result_types]
    Operation.create("func.return", operands=empties, loc=func.location, ip=ip)


def _host_weights(weights: Mapping[str, np.ndarray], float_dtype: str | None
                  ) -> dict[str, np.ndarray]:
    if float_dtype != "double":
        return dict(weights)
    return {n: np.ascontiguousarray(a, dtype=np.float64) if a.dtype == np.float32 else a
            for n, a in weights.items()}


def host_compile(program: str, float_dtype: str | None, weights: Mapping[str, np.ndarray], *,
                 cache: bool, filename: str) -> tuple[Any, dict[str, Any]]:
    """JIT the host program through the CPU target; (CompiledMLIR, signatures as called)."""
    from accel.host.compile import compile_mlir

    bound = _host_weights(weights, float_dtype)
    from accel.settings import host_settings

    host = compile_mlir(program, host_settings({}, cache=cache, filename=filename,
                                               opt_level=HOST_OPT_LEVEL), weights=bound)
    functions = dict(host.functions)
    if float_dtype == "double":  # callers pass and get float arrays (DoubleCall)
        functions = {n: _narrow_signature(s) for n, s in functions.items()}
    return host, functions


def _narrow_signature(sig: Any) -> Any:
    from accel.runtime.dtypes import DTYPES

    def narrow(spec: Any) -> Any:
        if spec.dtype is None or spec.dtype.mlir != "f64":
            return spec
        return dataclasses.replace(spec, dtype=DTYPES["f32"],
                                   type_str=spec.type_str.replace("f64", "f32"))

    return dataclasses.replace(sig, args=tuple(narrow(a) for a in sig.args),
                               results=tuple(narrow(r) for r in sig.results))


def _write_codegen_dir(folder: Path, executable: Any, func_name: str, g: Any, plan: Any,
                       sched: Any, log: _Phases, opts: Mapping[str, Any], text: str) -> None:
    from accel import targets
    from accel.artifact import save_executable
    from accel.cache import atomic_write
    from accel.targets.mncore import reports

    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "logs").mkdir(exist_ok=True)
        for name, body in executable.files.items():
            atomic_write(folder / name, body.encode())
        atomic_write(folder / "layout.html", reports.layout_html(g, plan).encode())
        atomic_write(folder / "profile.json", reports.dumps(reports.profile(sched)).encode())
        atomic_write(folder / "layout_plan_history.html",
                     reports.layout_plan_history_html(plan).encode())
        atomic_write(folder / "time_slice.txt",
                     reports.time_slice_txt(func_name, g, plan, sched).encode())
        atomic_write(folder / "time_slice.html",
                     reports.time_slice_html(g, plan, sched).encode())
        facts = {"graph": {"layers": len(g.layers), "flops": g.flops},
                 "layout": {"planner": plan.planner, "relayouts": len(plan.relayouts)},
                 "schedule": {"scheduler": sched.scheduler, "sa_steps": sched.sa_steps,
                              "sa_runs": sched.sa_runs, "beam_turns": sched.beam_turns,
                              "estimated_us": round(sched.time_s * 1e6, 3)}}
        atomic_write(folder / "trace.json",
                     reports.dumps(reports.trace(log.rows, sched, facts)).encode())
        for phase, lines in log.logs.items():
            atomic_write(folder / "logs" / f"{phase}.log", ("\n".join(lines) + "\n").encode())
        # The folder is also an artifact: accel.load_codegen_dir reloads it without tracing.
        save_executable(folder, executable, target=targets.get("mncore"), entry=func_name, options={
            k: v for k, v in opts.items() if k not in ("filename",)}, model_mlir=text)
    except OSError as err:
        raise AccelError(f"option 'codegen_dir': cannot write {folder}: {err}") from None
