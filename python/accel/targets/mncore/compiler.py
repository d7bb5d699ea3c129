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
    from accel.targets.cpu.signatures import parsed
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
        with log.phase("schedule") as out:
            cost = schedule.CostModel(g, plan, float_dtype or "float", opts["simulation_mode"],
                                      opts["sram_budget"], opts["scheduler"],
                                      merge=envs.get("CODEGEN_USE_MERGE", "0") not in ("0", ""))
            sched = schedule.schedule(g, cost, opts["scheduler"], envs,
                                      opts["sa_expected_run_iters"])
            out.append(f"scheduler {sched.scheduler}: {sched.time_s * 1e6:.3f} us estimated "
                       f"(simulation_mode {cost.mode}, SA steps {sched.sa_steps}, "
                       f"recomputed {len(sched.recomputed)})")
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
    files = {"l3ir.txt": reports.l3ir(func_name, g, plan, sched, opts),
             "option.json": option_json.option_file(opts, envs, name)}
    bound = _host_weights(weights, float_dtype)
    if layered_program is not None:
        files["layers.json"] = reports.dumps({"entry": func_name,
                                              **layered_program.to_json()})
    executable = MncoreExecutable(host, functions, bound, float_dtype, program, files,
                                  sched.time_s * 1e6)
    files["summary.json"] = reports.dumps(reports.summary(g, plan, sched, log.rows, opts))
    if opts.get("codegen_dir"):
        with log.phase("emit"):
            _write_codegen_dir(Path(opts["codegen_dir"]), executable, func_name, g, plan,
                               sched, log, opts, text)
    return executable


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
    from accel.targets.cpu.compile import compile_mlir

    bound = _host_weights(weights, float_dtype)
    host = compile_mlir(program, {"target": "cpu", "cache": cache, "filename": filename,
                                  "opt_level": HOST_OPT_LEVEL},
                        weights=bound)
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
        for phase, lines in log.logs.items():
            atomic_write(folder / "logs" / f"{phase}.log", ("\n".join(lines) + "\n").encode())
        # The folder is also an artifact: accel.load_codegen_dir reloads it without tracing.
        save_executable(folder, executable, entry=func_name, options={
            k: v for k, v in opts.items() if k not in ("filename",)}, model_mlir=text)
    except OSError as err:
        raise AccelError(f"option 'codegen_dir': cannot write {folder}: {err}") from None
