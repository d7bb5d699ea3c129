"""Fuzz cases: one generator per family, each a pure function of a seeded `random.Random`.

A case is a JSON object: `id`, `family`, `kind` (what runs it, `fz_kinds.run_case`), `expect`
("error" when the input is certainly invalid, so success is a defect; else "any") and the
kind's data. Cases carry everything they need (texts, argv, values), so a saved case
replays on its own.

Families (docs/fuzzing.md):
  ir        lit chunks mutated, fed to accel-opt/accel-run with their RUN line, and to
            compile_mlir; deep nesting
  pipeline  pass pipelines and pass options: unknown names, bad values, nesting
  options   every option of accel.options (wrong type, out of range, unknown) through
            compile_mlir, accel.compile and accel-compile
  grammar   MN-Core layout strings, RDU YAML rule lists, accel-run --input specs
  artifact  artifact folders damaged (manifest, weights, object files, option.json)
  api       wrong argument types and values for the public API
"""

from __future__ import annotations

import json
import random
from typing import Any

import fz_mutate
from fz_fixtures import ADD_MLIR, Seed

FAMILIES = ("ir", "pipeline", "options", "grammar", "artifact", "api")
#: Share of the cases each family gets when all run (cheap families get more).
WEIGHTS = {"ir": 30, "pipeline": 15, "options": 15, "grammar": 15, "artifact": 12, "api": 13}

Case = dict[str, Any]


class Generator:
    """Makes case `index` of a run from the seed alone (no dependence on scheduling)."""

    def __init__(self, seed: int, families: tuple[str, ...], corpus: list[Seed],
                 catalog: dict[str, Any], *, quick: bool = False):
        self.seed = seed
        self.families = families
        self.corpus = corpus
        self.catalog = catalog
        self.quick = quick

    def case(self, index: int) -> Case:
        rng = random.Random(f"{self.seed}/{index}")
        family = rng.choices(self.families, [WEIGHTS[f] for f in self.families])[0]
        case = _MAKERS[family](self, rng)
        case.setdefault("expect", "any")
        return {"id": index, "family": family, **case}


# -- ir ------------------------------------------------------------------------------------
def _ir(gen: Generator, rng: random.Random) -> Case:
    if rng.random() < 0.03:
        kind = rng.choice(("regions", "types", "attributes"))
        depth = rng.choice((50, 500, 5000, 50000))
        # The text is made when the case runs (`nest`): a case file stays small.
        return {"kind": "compile_mlir" if rng.random() < 0.5 else "accel-opt",
                "nest": [depth, kind], "args": [], "mutations": [f"nest-{kind}-{depth}"]}
    seed = rng.choice(gen.corpus)
    text, names = fz_mutate.mutate(seed.text, rng)
    kind = seed.tool if rng.random() < 0.7 else "compile_mlir"
    return {"kind": kind, "text": text, "args": list(seed.args), "source": seed.file,
            "mutations": names}


# -- pipeline -------------------------------------------------------------------------------
_ANCHORS = ("builtin.module", "func.func", "gpu.module", "bogus.op", "", "func.func(")
# ("cse " is not here: MLIR's pipeline grammar allows spaces around a pass name.)
_BAD_NAMES = ("bogus-pass", "CSE", "-cse", "cse--", "a(b)", "x" * 300, "\u0441se",
              "canonicalize{", "", "builtin.module", "func.func")
_OPTION_VALUES = ("0", "-1", "1", "8", "99999999999999999999", "4294967296", "true", "false",
                  "yes", "1.5", "nan", "", "x", "1,2,3", "0,0", "{}", "'q'", '"q"', "\u0663",
                  "1_0", "0x10", "[1]")


def _pass_text(gen: Generator, rng: random.Random, bad: list[str]) -> str:
    passes = gen.catalog["passes"]
    if rng.random() < 0.1:
        name = rng.choice(_BAD_NAMES)
        bad.append(f"pass name {name!r}")
    else:
        name = rng.choice(sorted(passes))
    options = passes.get(name, {})
    if rng.random() < 0.5 and (options or rng.random() < 0.3):
        items = []
        sep = rng.choice((" ", ","))
        # After a list option, `,bogus=` may be read as one more list element: then an
        # unknown key is not certainly an error.
        keys_count = sep == " " or not options
        for _ in range(rng.randint(1, 3)):
            if options and rng.random() < 0.85:
                key = rng.choice(sorted(options))
            else:
                key = rng.choice(("bogus", "tile_size", "", "=", "a b"))
                item = f"{key}={rng.choice(_OPTION_VALUES)}" if rng.random() < 0.9 else key
                # `cse{}` (an empty item alone) is valid: empty option braces.
                if (keys_count or not items) and item:
                    bad.append(f"option {key!r} of {name}")
                items.append(item)
                continue
            items.append(f"{key}={rng.choice(_OPTION_VALUES)}" if rng.random() < 0.9 else key)
        name += "{" + sep.join(items) + "}"
    anchor = gen.catalog["anchors"].get(name.split("{")[0])
    if anchor and anchor != "builtin.module" and rng.random() < 0.7:
        name = f"{anchor}({name})"
    return name


def _pipeline(gen: Generator, rng: random.Random) -> Case:
    bad: list[str] = []
    steps = [_pass_text(gen, rng, bad) for _ in range(rng.randint(0, 4))]
    text = ",".join(steps)
    if rng.random() < 0.2:
        depth = rng.choice((1, 2, 3, 50, 2000))
        anchor = rng.choice(_ANCHORS)
        text = f"{anchor}(" * depth + text + ")" * depth
        if anchor in ("", "func.func("):  # `(` alone, or unbalanced parentheses
            bad.append(f"nesting {anchor!r} x{depth}")
    elif rng.random() < 0.8:
        text = f"builtin.module({text})"
    if rng.random() < 0.15:
        text, names = fz_mutate.mutate(text, rng, 1)
        bad.append(f"mutated: {names[0]}")
    if not steps and rng.random() < 0.5:
        text = rng.choice(("", " ", "builtin.module()", "()", ","))
        bad.append("empty pipeline")
    # Invalid names, keys, nesting or syntax must be an error; values may be fine or not.
    definite = [b for b in bad if not b.startswith("mutated")]
    if rng.random() < 0.3 and steps and all(steps):
        # The short form: one flag per pass, no nesting or mutation of the pipeline text;
        # `-cse` becomes `--cse` (a valid spelling).
        args = [f"-{s}" for s in steps]
        definite = [b for b in definite if b.startswith("option") or (
            b.startswith("pass name") and b != "pass name '-cse'")]
    else:
        args = [f"--pass-pipeline={text}"]
    return {"kind": "accel-opt", "input": "pipeline_input.mlir", "args": args,
            "expect": "error" if definite else "any", "why": bad}


# -- options --------------------------------------------------------------------------------
_WRONG = ("x", "", 1, 1.5, True, None, [], {}, [1, 2], "1", 2 ** 70, -(2 ** 70),
          float("nan"), float("inf"), "a" * 5000, {"k": 1})
_PATHS = ("/nonexistent/x/y", "/dev/null", "/proc/accel-fuzz", "", "x" * 5000, "a\x00b",
          "{fixtures}/model.py/sub", "{fixtures}", "{work}/fresh", "{fixtures}/add.mlir")
_PATH_OPTIONS = ("output_folder", "codegen_dir", "layout_spec", "gemm_layout_spec",
                 "option_json", "o1_rule_list", "out_onnx")


def option_values(opt: Any, rng: random.Random) -> tuple[Any, str]:
    """A value for option `opt` and why it is certainly invalid ("" if it may be valid):
    "type" (wrong Python type), "range" or "choice"."""
    roll = rng.random()
    if opt.name == "target":
        if roll < 0.8:
            return rng.choice(("cpu", "rdu", "mncore", "nvgpu")), ""
        return rng.choice(("bogus", "CPU", "")), "choice"
    if opt.name == "device":  # the target's own list
        return rng.choice(("host", "x86-64", "x86-64-v3", "generic", "cuda:0", "sm_80",
                           "bogus", "")), ""
    if opt.name in _PATH_OPTIONS and roll < 0.5:
        return rng.choice(_PATHS), ""
    if roll < 0.35:
        if isinstance(opt.choices, tuple) and opt.choices:
            return rng.choice(opt.choices), ""
        if bool in opt.types:
            return rng.choice((True, False)), ""
        if opt.minimum is not None or opt.maximum is not None:
            low = opt.minimum if opt.minimum is not None else -5
            high = opt.maximum if opt.maximum is not None else low + 64
            value = rng.uniform(low, high) if float in opt.types else rng.randint(
                int(low), int(high))
            return value, ""
        return opt.default, ""
    if roll < 0.55 and (opt.minimum is not None or opt.maximum is not None):
        edge = rng.choice([v for v in (opt.minimum, opt.maximum) if v is not None])
        step = rng.choice((1, 10 ** 9, 10 ** 30)) * (1 if edge == opt.maximum else -1)
        if edge == opt.minimum and opt.maximum is not None and edge == opt.maximum:
            step = 1
        return edge + step, "range"
    if roll < 0.65 and isinstance(opt.choices, tuple):
        return rng.choice(("bogus", "O3", " o3", "default ", "N0NE", "\u0663")), "choice"
    value = rng.choice(_WRONG)
    ok_type = (value is None and type(None) in opt.types) or (
        isinstance(value, bool) and bool in opt.types) or (
        not isinstance(value, bool) and isinstance(value, opt.types)) or (
        isinstance(value, int) and not isinstance(value, bool) and float in opt.types)
    return value, "" if ok_type else "type"


def _options(gen: Generator, rng: random.Random) -> Case:
    from accel.options import OPTIONS

    names = sorted(OPTIONS)
    options: dict[str, Any] = {}
    bad: list[str] = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        opt = OPTIONS[rng.choice(names)]
        if opt.name in options:  # its first value (and why it is invalid) stands
            continue
        value, why = option_values(opt, rng)
        options[opt.name] = value
        if why:
            bad.append(f"{why}: {opt.name}")
        if opt.scope not in ("common", "call", "aot") and rng.random() < 0.85:
            options["target"] = opt.scope
    if rng.random() < 0.07:
        key = rng.choice(("bogus", "opt-level", "OPT_LEVEL", "", "optlevel", "tile_size"))
        options[key] = 1
        bad.append(f"unknown: {key!r}")
    # accel-compile and accel.compile cost a compile when the options are valid (and a
    # torch export for model.py): fewer of them, most on the MLIR file.
    weights = (("compile_mlir", 60), ("accel-compile", 25), ("compile", 15))
    if gen.quick:
        weights = (("compile_mlir", 75), ("accel-compile", 23), ("compile", 2))
    kind = rng.choices([k for k, _ in weights], [w for _, w in weights])[0]
    if kind == "accel-compile":
        # As text a wrong Python type may well be a valid value ("1" for a bool).
        bad = [b for b in bad if not b.startswith("type")]
        return {"kind": kind, "options": _as_text(options), "source": "model.py"
                if rng.random() < 0.1 else "add.mlir", "expect": "error" if bad else "any",
                "why": bad}
    return {"kind": f"options-{kind}", "options": options, "expect": "error" if bad else "any",
            "why": bad}


def _as_text(options: dict[str, Any]) -> list[str]:
    """accel-compile spellings: --option name=value (JSON-ish text for lists)."""
    out = []
    for key, value in options.items():
        text = json.dumps(value) if isinstance(value, list | dict) else (
            "none" if value is None else str(value).lower() if isinstance(value, bool)
            else str(value))
        out += ["--option", f"{key}={text}"]
    return out


# -- grammar --------------------------------------------------------------------------------
LAYOUTS = ("((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); "
           "B@[L1B])", "((4_PE:1, 2:1), (2_W:1); B@[L1B, MAB])", "((4_PE:1))",
           "((), (8:3072, 8_L1B:1, 2_Time:1, 2:1536, 16:1), (96:16, 4_W:1, 4_PE:1))",
           "((16_MAB:1, 4_PE:1), (8:1))")
INPUT_SPECS = ("2x3xf32=1,2,3,4,5,6", "4xf32=1", "2x2xi32=7", "3xf16=0.1,65504,1",
               "3xbf16=1.00390625,0.1,3", "0x3xf32=", "4xi8=1,2,3,4", "2xf64=1e300,-0.0")


def _grammar(gen: Generator, rng: random.Random) -> Case:
    kind = rng.choice(("layout", "layout", "layout-ir", "rules", "rules", "run-input"))
    if kind in ("layout", "layout-ir"):
        text, names = fz_mutate.mutate(rng.choice(LAYOUTS), rng)
        shape = [rng.choice((0, 1, 4, 96, 300, 2 ** 31)) for _ in range(rng.randint(0, 3))]
        return {"kind": kind, "text": text, "shape": shape, "mutations": names}
    if kind == "rules":
        name = rng.choice(("default", "nlp", "gpt2", "bloom", "gpt_neox_inference",
                           "gpt_neox_training"))
        if rng.random() < 0.05:
            return {"kind": "rules", "shipped": None, "text": _yaml_bomb(rng.randint(5, 30)),
                    "mutations": ["alias-bomb"]}
        return {"kind": "rules", "shipped": name, "mutations_seed": rng.randrange(1 << 30)}
    spec, names = fz_mutate.mutate(rng.choice(INPUT_SPECS), rng)
    # Digits of other scripts, 1_0, 0b1 are not numbers: the spec must be refused.
    certain = any(n == "unicode-digit" for n in names)
    return {"kind": "run-input", "spec": spec, "mutations": names,
            "expect": "error" if certain else "any"}


def _yaml_bomb(levels: int) -> str:
    lines = ["a0: &a0 [matmul, softmax]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]")
    lines.append(f"rules:\n- name: X\n  priority: 1\n  pattern: *a{levels - 1}")
    return "\n".join(lines) + "\n"


# -- artifact -------------------------------------------------------------------------------
_JSON_VALUES = (None, 0, -1, 2 ** 64, 1.5, "", "x", [], {}, [1, 2], {"a": 1}, True,
                "../../etc/passwd", "a" * 5000)


def _artifact(gen: Generator, rng: random.Random) -> Case:
    folder = rng.choice(("model_artifact", "model_artifact", "add_artifact"))
    ops = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        target = rng.choice(("manifest-json", "manifest-json", "manifest-bytes", "weights",
                             "weights-consistent", "object", "module-ll", "model-mlir",
                             "file-kind", "option-json"))
        ops.append({"op": target, "seed": rng.randrange(1 << 30),
                    "value": rng.choice(_JSON_VALUES)})
    kind = "option-json" if ops[0]["op"] == "option-json" else "load"
    return {"kind": f"artifact-{kind}", "folder": folder, "ops": ops}


# -- api ------------------------------------------------------------------------------------
#: Names of values `fz_api.value` builds (JSON cannot hold them).
VALUES = ("none", "int0", "int-1", "int-huge", "float", "nan", "str", "str-long", "bytes",
          "list", "list-nested", "dict", "dict-bad", "object", "lambda", "ndarray",
          "ndarray-f64", "ndarray-0d", "ndarray-huge-view", "tensor", "tensor-int",
          "tensor-grad", "path-file", "path-missing", "path-proc", "true", "ellipsis", "set",
          "tuple-empty", "module", "class", "fixture-folder", "mlir-text", "model",
          "inputs", "options-ok")
_API_KINDS = ("compile_mlir", "compile", "load", "call", "invoke", "jit", "threads", "save")
#: Values each argument takes when the case keeps it valid.
_VALID = {"source": "mlir-text", "model": "model", "inputs": "inputs", "options": "options-ok",
          "folder": "fixture-folder", "weights": "none", "dynamic_shapes": "none"}


def _api(gen: Generator, rng: random.Random) -> Case:
    kind = rng.choice(_API_KINDS)
    params = {"compile_mlir": ("source", "options", "weights"),
              "compile": ("model", "inputs", "options", "dynamic_shapes"),
              "load": ("folder",), "call": ("args",), "invoke": ("name", "args"),
              "jit": ("model", "options"), "threads": ("n",), "save": ("folder",)}[kind]
    args: dict[str, Any] = {}
    for p in params:
        keep_valid = rng.random() < (0.7 if len(params) > 1 else 0.2)
        if p == "args":
            args[p] = [rng.choice(VALUES) for _ in range(rng.choice((0, 1, 2, 2, 3)))]
        elif keep_valid and p in _VALID:
            args[p] = _VALID[p]
        elif p == "name" and keep_valid:
            args[p] = "str-main"
        else:
            args[p] = rng.choice(VALUES)
    if gen.quick and kind in ("compile", "jit"):
        args["options"] = "options-ok"  # cache on: one compile per worker, then hits
    return {"kind": f"api-{kind}", "args": args}


_MAKERS = {"ir": _ir, "pipeline": _pipeline, "options": _options, "grammar": _grammar,
           "artifact": _artifact, "api": _api}

__all__ = ["ADD_MLIR", "FAMILIES", "Case", "Generator"]
