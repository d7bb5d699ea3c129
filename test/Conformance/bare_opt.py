"""A minimal `mlir-opt` on the bare MLIR Python bindings: the conformance suite's reference.

What a developer gets from the bindings alone in ~100 lines: parse, a pass pipeline (the
textual form or one flag per pass), the printing switches `get_asm` and
`enable_ir_printing` take, a naive `--split-input-file` and `--verify-diagnostics` (errors
on the expected line). accel-opt must do at least as well on every RUN line.
"""

from __future__ import annotations

import re
import sys

from torch_mlir import ir
from torch_mlir.passmanager import PassManager

_EXPECTED = re.compile(r"expected-(error|warning|note|remark)(?:-re)?\s*(?:@([+-]\d+))?\s*"
                       r"\{\{(.*)\}\}")


def main(argv: list[str]) -> int:
    flags, passes, inputs = set(), [], []
    values: dict[str, str] = {}
    it = iter(argv)
    for arg in it:
        if arg == "-" or not arg.startswith("-"):
            inputs.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if name in ("o", "pass-pipeline", "p") and not eq:
            value, eq = next(it, ""), "="
        if name in ("o", "pass-pipeline", "p"):
            values[name] = value
        elif name.startswith(("mlir-", "allow-", "split-", "verify-", "dump-")):
            flags.add(name)
        else:
            passes.append(f"{name}{{{value.strip(chr(39))}}}" if eq else name)
    text = sys.stdin.read() if not inputs or inputs[0] == "-" else open(inputs[0]).read()
    pipeline = values.get("pass-pipeline") or values.get("p") or \
        ("builtin.module(" + ",".join(passes) + ")" if passes else None)
    chunks = re.split(r"^// -----\s*$", text, flags=re.M) if "split-input-file" in flags \
        else [text]
    outputs, failed = [], False
    for chunk in chunks:
        out, diags = _one(chunk, pipeline, flags)
        if "verify-diagnostics" in flags:
            failed |= not _verify(chunk, diags)
        else:
            for d in diags:
                print(d, file=sys.stderr)
            failed |= out is None
        outputs.append(out or "")
    data = "// -----\n".join(outputs)
    if values.get("o", "-") == "-":
        sys.stdout.write(data)
    elif not failed:
        with open(values["o"], "w") as f:
            f.write(data)
    return 1 if failed else 0


def _one(text: str, pipeline: str | None, flags: set[str]) -> tuple[str | None, list[str]]:
    diags: list[str] = []
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = "allow-unregistered-dialect" in flags
        if "mlir-disable-threading" in flags:
            ctx.enable_multithreading(False)
        ctx.attach_diagnostic_handler(lambda d: diags.append(_show(d)) or True)
        try:
            module = ir.Module.parse(text)
            if pipeline:
                pm = PassManager.parse(pipeline)
                if "dump-pass-pipeline" in flags:
                    print(str(pm), file=sys.stderr)
                if {"mlir-print-ir-after-all", "mlir-print-ir-before-all"} & flags:
                    pm.enable_ir_printing(
                        print_before_all="mlir-print-ir-before-all" in flags,
                        print_after_all="mlir-print-ir-after-all" in flags)
                pm.run(module.operation)
        except (ir.MLIRError, ValueError) as err:
            diags += [_show(d) for d in getattr(err, "error_diagnostics", [])] or [str(err)]
            return None, diags
        asm = module.operation.get_asm(
            enable_debug_info="mlir-print-debuginfo" in flags,
            print_generic_op_form="mlir-print-op-generic" in flags,
            use_local_scope="mlir-print-local-scope" in flags)
        return str(asm) + "\n", diags


def _show(d: object) -> str:
    return f"{d.location}: {str(d.severity).rsplit('.', 1)[-1].lower()}: {d.message}"  # type: ignore[attr-defined]


def _verify(chunk: str, diags: list[str]) -> bool:
    """Every expected error (same line or @+N/@-N) has an error on that line, and back."""
    expected = []
    for number, line in enumerate(chunk.splitlines(), start=1):
        m = _EXPECTED.search(line)
        if m and m.group(1) == "error":
            expected.append((number + int(m.group(2) or 0), m.group(3)))
    errors = []
    for d in diags:
        m = re.search(r":(\d+):\d+: error: (.*)", d)
        if m:
            errors.append((int(m.group(1)), m.group(2)))
    return all(any(line == e[0] and text in e[1] for e in errors) for line, text in expected) \
        and all(any(line == e[0] and text in e[1] for line, text in expected) for e in errors)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
