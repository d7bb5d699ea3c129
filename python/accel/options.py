"""THE options table: every option of accel, once.

`accel.compile`, `@accel.jit`, `torch.compile(backend="accel", options=...)`,
`accel.compile_mlir`, `accel-compile` (flags, `--option`, `--option-json`) and option.json
all read and validate through `accel.settings.resolve()` (this table imports no target:
the merge with a target's presets is `accel.settings.merge`). An option has a type, a
default, a doc, a scope (where it applies), whether it changes generated code (then it is
part of the compile-cache key), its command-line spelling, and its allowed values or range.

Scopes: `common` (every target), `call` (how a compiled model is called), `aot` (C
libraries), `torch_compile` (only `torch.compile(backend="accel", options=...)`: which of
dynamo's graphs accel compiles; `split_torch_compile` takes them out before resolving),
`train` (compiled training, `accel.compile_train_step`; an error with `accel.compile`), or a
target's name (`cpu`, `nvgpu`, `rdu`, `mncore`): such an option is an error with any other
target. Presets (`-o0`/`-o1`/`-o3`, `O0`..`O4`, ...) are named sets of option
values that each target keeps as data in its folder (`accel.targets`); `preset` picks one.

Resolution order: defaults < the target's preset < the options given. `resolve` raises
`OptionError` (an `AccelError` and a `ValueError`) naming the option and the valid values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from accel.diagnostics import AccelError, NotSupportedYet

#: Tolerances of `verify_numerics`: |compiled - eager| <= ATOL + RTOL * |eager|, elementwise.
VERIFY_RTOL = 1e-4
VERIFY_ATOL = 1e-5

SCOPES = ("common", "call", "aot", "torch_compile", "train", "cpu", "nvgpu", "rdu", "mncore")
#: Sentinel for `Option.choices`: the allowed values come from the chosen target.
FROM_TARGET = "from-target"


class OptionError(AccelError, ValueError):
    """A bad option: unknown, wrong type, out of range, or not for this target."""


class OptionTypeError(OptionError, TypeError):
    """Options that are not a dict, or an option value of the wrong type: also a TypeError,
    as Python's own argument checks raise."""


@dataclass(frozen=True)
class Option:
    """One option. `choices` lists the allowed values (or FROM_TARGET); `minimum`/`maximum`
    bound ints and floats; `check` returns a reason for a value that is still invalid."""

    name: str
    types: tuple[type, ...]
    default: Any
    doc: str
    scope: str = "common"
    affects_code: bool = False
    #: Command-line spelling in accel-compile and accel-run ("": `--name-with-hyphens`, as
    #: PolyBlocks spells options on a command line).
    flag: str = ""
    choices: tuple[Any, ...] | str | None = None
    minimum: float | None = None
    maximum: float | None = None
    check: Callable[[Any], str | None] | None = None
    #: Values accepted by the table but whose feature is not built yet.
    unsupported: tuple[Any, ...] = ()
    #: Other targets the option also applies to (a target-scoped option shared by two).
    also: tuple[str, ...] = ()
    #: Experimental: supported but subject to change; accel-compile's --help lists it only
    #: with --debug (SambaFlow's rule for experimental arguments).
    experimental: bool = False
    #: Other spellings people already use (docs/python-api.md, "Aliases"): a name (PolyBlocks',
    #: SambaFlow's, MLSDK's) is accepted wherever options are given and as `--name-with-
    #: hyphens`; one starting with "-" is a command-line spelling only (SambaFlow's -ws).
    aliases: tuple[str, ...] = ()

    @property
    def flags(self) -> tuple[str, ...]:
        """The command-line spellings: `flag` (or `--name-with-hyphens`), then the aliases'."""
        return (self.flag or _dashed(self.name),
                *(a if a.startswith("-") else _dashed(a) for a in self.aliases))

    def allowed(self) -> str:
        """The valid values, as text for errors and --help."""
        none = "None or " if _NONE in self.types and self.choices is None else ""
        if isinstance(self.choices, tuple):
            return "one of " + ", ".join(_show(c) for c in self.choices)
        if self.choices == FROM_TARGET:
            return "one of the target's (accel-compile --help lists them)"
        kind = next((t for t in self.types if t is not _NONE), str)
        noun = {bool: "a bool", int: "an int", float: "a number", str: "a string",
                list: "a list"}.get(
            kind, kind.__name__)
        if self.minimum is not None and self.maximum is not None:
            return f"{none}{noun} from {_show(self.minimum)} to {_show(self.maximum)}"
        if self.minimum is not None:
            return f"{none}{noun} >= {_show(self.minimum)}"
        if self.maximum is not None:
            return f"{none}{noun} <= {_show(self.maximum)}"
        return none + noun


def _dashed(name: str) -> str:
    return "--" + name.replace("_", "-")


def _short(value: Any, limit: int = 80) -> str:
    """`repr(value)`, shortened: an error line stays one readable line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 20]}...{text[-12:]} " \
        f"({len(text)} characters)"


def _show(value: Any) -> str:
    return "None" if value is None else str(value).lower() if isinstance(value, bool) \
        else str(value)


#: Words a C (C89..C23) or C++ compiler reads as keywords: never a name in a generated header.
C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while alignas alignof bool constexpr false nullptr
    static_assert thread_local true typeof typeof_unqual asm catch class const_cast delete
    dynamic_cast explicit export friend mutable namespace new noexcept operator private
    protected public reinterpret_cast static_cast template this throw try typeid typename
    using virtual wchar_t char8_t char16_t char32_t concept consteval constinit co_await
    co_return co_yield decltype requires""".split())
#: libc names an AOT library's runtime calls (or a program's own `main`): a library that
#: defined one of them would replace the process's.
C_RESERVED_NAMES = frozenset({"main", "malloc", "free", "calloc", "realloc", "abort", "exit",
                              "memcpy", "memmove", "memset", "strncpy", "strlen", "printf"})


def c_identifier_problem(value: str) -> str | None:
    """Why `value` cannot name a C function of a generated library, or None."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", value):
        return "must be a C identifier (letters, digits, _) of at most 128 characters"
    if value in C_KEYWORDS:
        return "is a C/C++ keyword"
    if value.startswith("__") or re.match(r"_[A-Z]", value):
        return "is reserved in C (names starting with __ or _ and a capital)"
    if value in C_RESERVED_NAMES:
        return "is a C library function the library's runtime uses"
    return None


def folder_problem(value: str) -> str | None:
    """Why folder `value` can be neither used nor created, or None: checked before any work,
    so a compile does not end in an OSError after minutes (the folder is made later)."""
    import os
    import stat
    from pathlib import Path

    if not value.strip() or "\0" in value:
        return "must be a folder path"
    probe = Path(value)
    while True:  # the folder itself, else its nearest existing ancestor
        try:
            info = probe.stat()
            break
        except (FileNotFoundError, NotADirectoryError):
            if probe.parent == probe:
                return f"cannot be created: '{probe}' does not exist"
            probe = probe.parent
        except OSError as err:
            return f"cannot be used: '{probe}': {err.strerror}"
    if not stat.S_ISDIR(info.st_mode):
        return f"cannot be created: '{probe}' is a file, not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"cannot be created: '{probe}' is not writable (permission denied)"
    return None


_NONE = type(None)
#: A graph's name in `accel.dynamo`: graph_N, or one of its AOTAutograd parts.
GRAPH_NAME = re.compile(r"graph_(0|[1-9][0-9]*)(_forward|_backward)?")


def _graph_list(value: Any) -> str | None:
    for entry in value:
        if isinstance(entry, bool) or not (
                isinstance(entry, int) and entry >= 0 or
                isinstance(entry, str) and GRAPH_NAME.fullmatch(entry)):
            return (f"must list graph indices (ints >= 0) or names (graph_N, graph_N_forward, "
                    f"graph_N_backward); {entry!r} is neither")
    return None


_TABLE: tuple[Option, ...] = (
    # -- common -------------------------------------------------------------------------------
    Option("target", (str,), "cpu", "Target to compile for (accel.targets).", flag="--target",
           choices=FROM_TARGET),
    Option("preset", (str, _NONE), None, "A named option set of the target (cpu: o0, o1, "
           "o3); None: the target's default preset.", flag="--preset"),
    Option("opt_level", (int,), 3, "Optimisation level, 0-3 (the cpu presets o0/o1/o3 set "
           "it; 0 also turns fusion off).", affects_code=True, flag="--opt-level",
           minimum=0, maximum=3,
           aliases=("-O",)),
    Option("device", (str,), "host", "The device compiled for: cpu host, x86-64 (generic), "
           "x86-64-v2..v4 (cross-compiling AOT libraries).", flag="--device",
           choices=FROM_TARGET,
           aliases=("--target-cpu",)),
    Option("strict_target", (bool,), False, "Fail instead of falling back to the host for "
           "ops the target cannot run (the cpu target runs every op it compiles)."),
    Option("mm_conv_precision_mode", (str,), "default", "Precision of the multiplies and "
           "adds of matmuls and convolutions: operands_accumulator (mixed_fp16_fp32: f16 "
           "operands, f32 sums; tf32: f32 rounded to TensorFloat-32; fp16: f16 both; int "
           "modes for integer ops); 'default' keeps the model's dtypes (PolyBlocks "
           "defaults to mixed on GPUs); docs/precision.md.", affects_code=True,
           choices=("default", "fp32", "tf32", "fp16", "bf16", "mixed_fp16_fp32",
                    "mixed_bf16_fp32", "int32", "mixed_int8_int32")),
    Option("float_dtype", (str, _NONE), None, "Convert float computation to this dtype; "
           "None keeps the model's dtypes.", affects_code=True,
           choices=(None, "mixed", "half", "float", "double")),
    Option("cache", (bool,), True, "Reuse and fill the on-disk compile cache "
           "($ACCEL_CACHE_DIR, else $XDG_CACHE_HOME/accel or ~/.cache/accel); docs/cache.md."),
    Option("verify_numerics", (bool,), False, f"Also run the model eagerly on every call and "
           f"raise AccelError unless all outputs match (rtol={VERIFY_RTOL}, "
           f"atol={VERIFY_ATOL})."),
    # -- torch_compile ------------------------------------------------------------------------
    Option("select_graphs", (list, tuple, _NONE), None, "torch.compile: compile only these "
           "of dynamo's graphs, as indices in capture order from 0 or names (graph_N, "
           "graph_N_forward, graph_N_backward); the others run eagerly; None: all "
           "(PolyBlocks' torch_polyblocks_select_graphs).", scope="torch_compile",
           check=_graph_list,
           aliases=("torch_polyblocks_select_graphs",)),
    Option("filter_graphs", (list, tuple, _NONE), None, "torch.compile: run these of "
           "dynamo's graphs eagerly (indices or names, as select_graphs) and compile the "
           "rest (PolyBlocks' torch_polyblocks_filter_graphs).", scope="torch_compile",
           check=_graph_list,
           aliases=("torch_polyblocks_filter_graphs",)),
    # -- call ---------------------------------------------------------------------------------
    Option("num_threads", (int, _NONE), None, "Threads for the parallel loops of compiled "
           "code, set before each call; None: the process setting (accel.set_num_threads, "
           "else $ACCEL_NUM_THREADS, else all cores).", scope="call", minimum=1),
    Option("num_iters", (int,), 1, "Run each call this many times on the same inputs "
           "(benchmarking); the mean seconds per run is CompiledModule.last_seconds.",
           scope="call", flag="--num-iters", minimum=1),
    # -- aot ----------------------------------------------------------------------------------
    Option("aot", (bool,), False, "Also build a C library (lib<aot_name>.so, <aot_name>.o, "
           "<aot_name>.h) into output_folder (docs/aot.md).", scope="aot", flag="--aot",
           aliases=("polyblocks_gen_library",)),
    Option("aot_name", (str,), "accel_artifact", "Name of the AOT library and its C "
           "function.", scope="aot", flag="--aot-name", check=c_identifier_problem),
    Option("output_folder", (str, _NONE), None, "Folder for the AOT files (None: the "
           "current folder).", scope="aot", check=folder_problem),
    Option("user_memory", (bool,), False, "AOT: the C function takes a scratch pool "
           "(pointer, size) and makes no heap allocation.", scope="aot",
           flag="--user-memory"),
    # -- train --------------------------------------------------------------------------------
    Option("grad_accumulation_steps", (int,), 1, "Training: split each batch along dim 0 "
           "into this many micro-batches, run forward and backward on each and update once "
           "with the mean gradient (docs/training.md).", scope="train",
           flag="--grad-accumulation-steps", minimum=1),
    Option("clip_grad_norm", (float, _NONE), None, "Training: clip the gradients' total "
           "2-norm to this value before the update, as torch.nn.utils.clip_grad_norm_ "
           "(None: no clipping).", scope="train", flag="--clip-grad-norm",
           check=lambda v: "must be > 0" if v <= 0 else None),
    Option("data_parallel", (bool,), False, "Training: average the gradients across the "
           "processes of the initialised torch.distributed group before each update "
           "(SambaFlow --data-parallel; docs/training.md).", scope="train",
           flag="--data-parallel"),
    Option("world_size", (int, _NONE), None, "Training with data_parallel: the minimum "
           "number of replicas (SambaFlow -ws: compile with 2; the number launched is "
           "decided at run time and may be larger; fewer is an error).", scope="train",
           flag="--world-size", minimum=1,
           aliases=("-ws",)),
    # -- cpu ----------------------------------------------------------------------------------
    Option("disable_affine_fusion", (bool,), False, "Do not fuse loop nests "
           "(accel-affine-fusion; docs/fusion.md).", scope="cpu", affects_code=True,
           aliases=("polyblocks_disable_affine_fusion",)),
    Option("disable_reduce_reduce_fusion", (bool,), False, "Do not fuse reduction chains "
           "(cpu: accel-reduce-reduce-fusion, nvgpu: accel-nvgpu-flash-attention: attention "
           "without the score matrix).", scope="cpu", affects_code=True, also=("nvgpu",),
           aliases=("polyblocks_disable_reduce_reduce_fusion",)),
    Option("split_functions", (bool, _NONE), None, "Compile functions of 500+ ops as parts "
           "that LLVM optimises one by one, equal parts (repeated layers) once "
           "(accel-split-functions, accel-dedupe-functions; docs/compile-time.md). None: on "
           "unless $ACCEL_SPLIT_FUNCTIONS=0.", scope="cpu", affects_code=True),
    Option("disable_fast_math", (bool,), False, "Keep strict IEEE semantics: no fast-math "
           "flags (the unsafe-math pass then does not reassociate reductions).", scope="cpu",
           affects_code=True,
           aliases=("mlir_disable_fast_math",)),
    Option("freeze_weights", (bool,), False, "Inference: treat the model's parameters as "
           "constants, so conv and matmul kernels read copies packed once (the first call) "
           "instead of packing them on every call; changing a parameter in place afterwards "
           "is not supported: those kernels keep the old values, compile again (inductor's "
           "freezing, onnxruntime's prepacking; docs/cpu-codegen.md).",
           scope="cpu", affects_code=True),
    Option("conv_layout", (str,), "nchw", "Layout of convolutions' activations: 'nchw' "
           "(as the model) or 'nchwc' (blocked by 8 channels between the graph's edges, "
           "kept through BatchNorm, ReLU, residual adds and pads: accel-blocked-layout; "
           "docs/cpu-codegen.md).", scope="cpu", affects_code=True,
           choices=("nchw", "nchwc")),
    Option("disable_unsafe_math_canonicalizations", (bool,), False, "Forbid value-changing "
           "float rewrites (x/sqrt(y) -> x*rsqrt(y), x/C -> x*(1/C), reassociated "
           "reductions).", scope="cpu", affects_code=True,
           aliases=("polyblocks_disable_unsafe_math_canonicalizations",)),
    # -- rdu ----------------------------------------------------------------------------------
    Option("sectioning", (str,), "o3", "RDU: how the graph is cut into sections: o0 (one "
           "PyTorch operator per section), o1 (fusion rule list), o3 (as few sections as fit "
           "the chip); the presets o0/o1/o3 set it (docs/rdu.md).", scope="rdu",
           affects_code=True, flag="--sectioning", choices=("o0", "o1", "o3"),
           experimental=True),
    Option("o1_rule_list", (str,), "default", "RDU -o1: fusion rule list, a shipped name "
           "(default, nlp, gpt2, bloom, gpt_neox_inference, gpt_neox_training) or a YAML "
           "file path.", scope="rdu", affects_code=True, flag="--o1-rule-list"),
    Option("compiler_mode", (str, _NONE), None, "RDU: 'nlp' partitions transformer-like "
           "graphs faster (module-aligned cuts first).", scope="rdu", affects_code=True,
           flag="--compiler-mode", choices=(None, "nlp")),
    Option("enable_hypersection", (bool, _NONE), None, "RDU: compile identical subgraphs "
           "once (None: on with o0/o1; with o3 only for modules annotated with "
           "accel.rdu.hypersection).", scope="rdu", affects_code=True,
           flag="--enable-hypersection"),
    Option("arch", (str,), "sn40l", "RDU architecture (dialects/rdu_arch.py).", scope="rdu",
           affects_code=True, flag="--arch", choices=("sn10", "sn20", "sn30", "sn40l")),
    Option("resources_scaling_factors", (str, list, tuple, _NONE), None, "RDU: share of the "
           "chip a section may use, 3 floats (forward, backward, optimizer) or 4 (forward, "
           "backward, gradient normalisation, optimizer), e.g. '1 0.8 0.8'.", scope="rdu",
           affects_code=True, flag="--resources-scaling-factors",
           # The rule lives with the arch table (imported only when the option is given).
           check=lambda v: __import__("accel.dialects.rdu_arch", fromlist=["_"])
           .scaling_factors_error(v)),
    Option("n_chips", (int,), 1, "RDU: chips the sections are placed on: the schedule cut "
           "into that many pipeline stages minimising the slowest (chip-to-chip transfers "
           "costed).", scope="rdu", affects_code=True, flag="--n-chips", minimum=1,
           maximum=8),
    Option("compiler_configs_file", (str, _NONE), None, "RDU: a JSON object of compiler "
           "settings (rdu option names, e.g. {\"n_chips\": 2}); options given directly win "
           "(docs/rdu.md).", scope="rdu", affects_code=True, flag="--compiler-configs-file"),
    Option("mac_human_decision", (str, _NONE), None, "RDU: a JSON file of human decisions "
           "the compiler applies and checks: sections, placement on chips, model-parallel "
           "GEMMs (docs/rdu.md).", scope="rdu", affects_code=True,
           flag="--mac-human-decision"),
    Option("num_spatial_batches", (int,), 1, "RDU: stream the batch through each section "
           "in this many parts (stages sized for one part: fewer PCUs/PMUs); must divide "
           "the batch.", scope="rdu", affects_code=True, flag="--num-spatial-batches",
           minimum=1),
    Option("model_parallel", (bool,), False, "RDU: split the GEMM sections the human "
           "decision file names across chips (requires --mac-human-decision and "
           "--n-chips > 1).", scope="rdu", affects_code=True, flag="--model-parallel"),
    Option("mac_v2", (bool,), False, "RDU: the legacy compiler, for legacy models: a view "
           "rides along with its producer at -o0/-o1 and chips are filled greedily.",
           scope="rdu", affects_code=True, flag="--mac-v2"),
    # -- mncore -------------------------------------------------------------------------------
    Option("option_json", (str, _NONE), None, "MLSDK option file: a preset name (O0, O1, O2, "
           "O3, O4, debug) or a path to JSON {name, envs, args}; options given directly win, "
           "envs apply unless already in the environment (docs/mncore.md).", scope="mncore",
           affects_code=True),
    Option("layout_planner", (str,), "lpz", "Layout planner: lpz (Layout Planner Z), bidi "
           "(bidirectional), legacy.", scope="mncore", affects_code=True,
           flag="--layout-planner", choices=("lpz", "bidi", "legacy")),
    Option("scheduler", (str,), "reuse_consecutive", "Scheduler (SRAM use between layers): "
           "always_from_dram, reuse_consecutive, spill_opt, auto_recompute_sa (annealing).",
           scope="mncore", affects_code=True, flag="--scheduler",
           choices=("always_from_dram", "reuse_consecutive", "spill_opt", "auto_recompute_sa")),
    Option("simulation_mode", (str,), "auto", "Node simulation: how many GEMM mapping "
           "patterns the cost model tries (fake: none, a rough estimate).", scope="mncore",
           affects_code=True, flag="--simulation-mode",
           choices=("auto", "default", "fast", "best", "full", "fake")),
    Option("sram_budget", (float,), 1.0, "Fraction of LM the scheduler may use (0 < x <= 1).",
           scope="mncore", affects_code=True, flag="--sram-budget", minimum=0.0, maximum=1.0,
           check=lambda v: "must be > 0" if v <= 0 else None),
    Option("sa_expected_run_iters", (int,), 0, "Iterations of the annealing-based "
           "optimisation loop (each CODEGEN_SA_STEPS steps); 0: until an iteration no longer "
           "improves the schedule.", scope="mncore", affects_code=True,
           flag="--sa-expected-run-iters", minimum=0),
    Option("layout_spec", (str, _NONE), None, "JSON file of layout overrides [{trigger, "
           "op_type, shape, layout}].", scope="mncore", affects_code=True,
           flag="--layout-spec"),
    Option("gemm_layout_spec", (str, _NONE), None, "JSON file of GEMM layout overrides "
           "[{key, A, BT, C}].", scope="mncore", affects_code=True, flag="--gemm-layout-spec"),
    Option("codegen_dir", (str, _NONE), None, "Folder for option.json, l3ir.txt, layout.html, "
           "summary.json, profile.json and compile logs (docs/mncore.md).", scope="mncore",
           flag="--codegen-dir", check=folder_problem),
    Option("out_onnx", (str, _NONE), None, "Also write the layer graph as ONNX to this path "
           "(needs the onnx package).", scope="mncore", flag="--out-onnx"),
    Option("node_simulation_cache", (str, _NONE), None, "Folder where node simulations "
           "are kept and reused across compiles (MLSDK's CacheOptions).", scope="mncore",
           flag="--node-simulation-cache", check=folder_problem),
    # -- nvgpu ---------------------------------------------------------------------------------
    Option("threads_per_block", (int,), 256, "nvgpu: threads of each kernel's thread block "
           "(a multiple of 32; accel-nvgpu-map-loops).", scope="nvgpu", affects_code=True,
           flag="--threads-per-block", minimum=32, maximum=1024,
           check=lambda n: None if n % 32 == 0 else "must be a multiple of 32"),
    Option("disable_tensor_core", (bool,), False, "nvgpu: no tensor-core (WMMA) kernels: "
           "every matmul, convolution and attention runs on the scalar FMA units (PolyBlocks' "
           "polyblocks_gpu_no_tensor_core).", scope="nvgpu", affects_code=True,
           flag="--disable-tensor-core",
           aliases=("polyblocks_gpu_no_tensor_core",)),
    Option("verify_ptx", (bool,), False, "nvgpu: check every kernel's PTX with ptxas "
           "(from the nvidia-cuda-nvcc wheel or a CUDA toolkit) at compile time.",
           scope="nvgpu", flag="--verify-ptx"),
    Option("device_one_time_load", (bool,), True, "nvgpu: load each PTX module into the "
           "driver once per process and share it between compiled models.", scope="nvgpu"),
    Option("cuda_graph", (bool,), True, "nvgpu: capture a function's kernel sequence as a "
           "CUDA graph on its first call and replay it.", scope="nvgpu"),
    Option("user_device_memory", (bool,), False, "nvgpu AOT: the library allocates no device "
           "memory; its last two arguments are a device pool (<name>_device_bytes() bytes) "
           "and a CUDA stream.", scope="nvgpu", flag="--user-device-memory"),
    Option("on_gpu_tensors", (bool,), False, "nvgpu AOT: the library's inputs and outputs "
           "are device pointers, used in place (no host copies).", scope="nvgpu",
           flag="--on-gpu-tensors"),
)

OPTIONS: MappingProxyType[str, Option] = MappingProxyType({o.name: o for o in _TABLE})
#: Alias name -> the option's name (the `aliases` column; command-line-only ones left out).
ALIASES: MappingProxyType[str, str] = MappingProxyType(
    {a: o.name for o in _TABLE for a in o.aliases if not a.startswith("-")})
#: Options that change generated code: the compile cache key covers them.
CODE_OPTIONS: tuple[str, ...] = tuple(o.name for o in _TABLE if o.affects_code)
#: Settings accel itself adds for a target, not options a user gives: which phase graph of
#: compiled training this is and its outputs' names (accel.api.compile_phase_graph).
INTERNAL_SETTINGS: tuple[str, ...] = ("graph_phase", "graph_outputs")


def canonical(key: Any, *, hyphens: bool = False) -> str | None:
    """The option `key` names (its name or an alias; with `hyphens`, as a command line
    spells them: `opt-level`), or None."""
    if not isinstance(key, str):
        return None
    name = key.replace("-", "_") if hyphens else key
    return name if name in OPTIONS else ALIASES.get(name)


def unknown_option(key: Any) -> str:
    """One short line for an unknown option name, with the closest valid one."""
    import difflib

    close = difflib.get_close_matches(str(key).replace("-", "_"), [*OPTIONS, *ALIASES], n=1,
                                      cutoff=0.6) if isinstance(key, str) else []
    hint = f" (did you mean '{close[0]}'?)" if close else \
        " (the options: docs/python-api.md, accel-compile --help)"
    return f"unknown option {_short(key, 40)}{hint}"


def named(options: Mapping[Any, Any]) -> dict[str, Any]:
    """`options` keyed by the options' names: aliases renamed, unknown names refused."""
    found: dict[str, Any] = {}
    spelled: dict[str, Any] = {}
    for key, value in options.items():
        name = canonical(key)
        if name is None:
            raise OptionError(unknown_option(key))
        if name in found:
            raise OptionError(f"option '{name}' is given twice (as {spelled[name]!r} and "
                              f"{key!r})")
        found[name], spelled[name] = value, key
    return found


def defaults() -> dict[str, Any]:
    """Every option at its default."""
    return {o.name: o.default for o in _TABLE}


def for_target(target: str) -> list[Option]:
    """The options that apply to `target`: common, call, aot and its own."""
    return [o for o in _TABLE
            if o.scope in ("common", "call", "aot", "train", target) or target in o.also]


def _type_ok(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # bool is an int subclass: accept it only where asked for
        return bool in types
    if isinstance(value, int) and float in types:
        return True
    return isinstance(value, types)


def check_value(option: Option, value: Any, choices: tuple[Any, ...] | None = None) -> Any:
    """`value` validated for `option` (`choices`: the target's, for FROM_TARGET)."""
    name = option.name
    if not _type_ok(value, option.types):
        raise OptionTypeError(f"option '{name}' must be {option.allowed()}, got "
                              f"{type(value).__name__} {_short(value)}")
    allowed = choices if option.choices == FROM_TARGET else option.choices
    if isinstance(allowed, tuple) and value not in allowed:
        raise OptionError(f"option '{name}' must be one of "
                          f"{', '.join(_show(c) for c in allowed)}, got {_short(value)}")
    if isinstance(value, float) and value != value:  # NaN passes every comparison
        raise OptionError(f"option '{name}' must be {option.allowed()}, got nan")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if option.minimum is not None and value < option.minimum or \
                option.maximum is not None and value > option.maximum:
            raise OptionError(f"option '{name}' must be {option.allowed()}, got {_short(value)}")
    if option.check is not None and value is not None:
        reason = option.check(value)
        if reason:
            raise OptionError(f"option '{name}' {reason}, got {_short(value)}")
    if value in option.unsupported:
        raise NotSupportedYet(f"option '{name}' is not supported yet with value {value!r} "
                              f"(supported: the default, {option.default!r})")
    return value


def split_torch_compile(options: Any) -> tuple[Any, dict[str, Any]]:
    """`options` without the `torch_compile`-scoped ones, and those (every one, defaults
    included) validated. Anything but a dict is left for `resolve` to reject."""
    tc = {o.name: o.default for o in _TABLE if o.scope == "torch_compile"}
    if not isinstance(options, Mapping):
        return options, tc
    options = named(options)
    rest = {k: v for k, v in options.items() if k not in tc}
    for key in tc:
        if key in options:
            tc[key] = check_value(OPTIONS[key], options[key])
    return rest, tc


def code_options(resolved: Mapping[str, Any]) -> dict[str, Any]:
    """The resolved options that change code (the compile-cache key's part)."""
    return {k: resolved[k] for k in CODE_OPTIONS if k in resolved}


def parse_text(option: Option | None, text: str) -> Any:
    """An option's value written as text (a command line, `--option`, MLSDK's args): true/
    false, none, ints, floats as the option's types allow, else the string. `option` None
    (a name not in the table): any of those."""
    types = option.types if option is not None else (bool, _NONE, int, float)
    low = text.strip().lower()
    bools = ("true", "false", "1", "0", "yes", "no") if option is not None else ("true", "false")
    if bool in types and low in bools:
        return low in ("true", "1", "yes")
    if _NONE in types and low in ("none", "null"):
        return None
    if int in types and re.fullmatch(r"[+-]?[0-9]+", text.strip()):
        return int(text)
    if float in types and re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)"
                                       r"([eE][+-]?[0-9]+)?", text.strip()):
        return float(text)
    return text
