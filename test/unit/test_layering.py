"""The spine's layering rules (docs/architecture.md), checked on the source: every import,
function-level ones included, between accel's own modules.

- no import circle anywhere in the package;
- a target imports the core and the host layer (`accel.host`), never another target; the
  host layer, the options table, settings' table and the artifact format import no target
  module (the registry hands targets out by name);
- the frontend imports no target and no cache; the cache imports nothing above the runtime
  (and `accel.llvm`'s host facts);
- only `accel.ir` imports `torch_mlir`; only `accel.llvm` imports llvmlite.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Package prefix -> source folder (pyproject's package-dir).
FOLDERS = {"accel": ROOT / "python" / "accel", "accel.dialects": ROOT / "dialects",
           "accel.passes": ROOT / "passes", "accel.tools": ROOT / "tools"}


def _modules() -> dict[str, Path]:
    found = {}
    for prefix, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([prefix, *parts]) if parts else prefix
            if prefix == "accel" and parts and parts[0] in ("dialects", "passes", "tools"):
                continue
            found[name] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The accel module `name` refers to (a module, or the package of an imported name)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, *, type_only: bool = False) -> set[str]:
    """The accel modules `module` imports; with `type_only`, also those it imports under
    `if TYPE_CHECKING:` (annotations only: they never run, but they are a dependency)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    skipped = set() if type_only else {
        id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
        and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
        for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` imports pkg.mod; `from pkg import name` uses pkg itself.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]
        for name in names:
            target = _resolve(name)
            if target is not None and target != module:
                out.add(target)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


def _packages(module: str) -> list[str]:
    """The packages above `module` (importing it runs each one's __init__ first)."""
    parts = module.split(".")
    return [p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in MODULES]


def _full_graph() -> dict[str, set[str]]:
    """Every dependency, for the circle check: runtime and type-only imports, and the
    packages an import runs (`accel.targets.mncore.graph` runs `accel.targets.mncore`'s
    __init__), except the importer's own packages (already running). The root package
    `accel` is the lazy facade over the API (`__getattr__`, type-only re-exports): its own
    imports are the top of the graph, not edges. Registries (`accel.targets`, the passes'
    `accel.passes.builtin`) import by name: what they list is no dependency of theirs."""
    graph = {}
    for m in MODULES:
        deps = _imports(m, type_only=True) if m != "accel" else set()
        mine = set(_packages(m))
        graph[m] = (deps | {p for d in deps for p in _packages(d) if p not in mine}) - {m}
    return graph


FULL_GRAPH = _full_graph()


def _raw_imports(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def _cycles(graph: dict[str, set[str]] = FULL_GRAPH) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


def test_the_walker_sees_function_level_imports() -> None:
    assert "accel.host.jit" in GRAPH["accel.targets.cpu"]  # imported inside methods
    assert "accel.ir" in GRAPH["accel.frontend.torch_import"]


def test_no_import_circles() -> None:
    """None at all: runtime, function-level and type-only imports, and the packages they
    run (issue 27: accel.passes <-> pipeline <-> targets.cpu <-> targets.mncore, nvgpu's
    executable <-> runtime, targets <-> targets.base)."""
    assert _cycles() == []


def test_the_circle_check_sees_type_only_imports_and_packages() -> None:
    assert "accel.targets.base" in FULL_GRAPH["accel.targets"]  # under TYPE_CHECKING
    assert "accel.targets.base" not in GRAPH["accel.targets"]
    # passes/mncore_plan_layouts imports accel.targets.mncore.graph: its package runs too.
    assert "accel.targets.mncore" in FULL_GRAPH["accel.passes.mncore_plan_layouts"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_artifacts_import_no_target() -> None:
    """The artifact format sits below the targets and their registry: callers hand it the
    target (`save_executable(..., target=)`, `load(folder, targets.get)`)."""
    assert {d for d in FULL_GRAPH["accel.artifact"] if d.startswith("accel.targets")} == set()


#: Modules of the targets package that are the spine, not a target.
SPINE = {"accel.targets", "accel.targets.base"}


def _target_of(module: str) -> str | None:
    parts = module.split(".")
    if module in SPINE or len(parts) < 3 or parts[1] != "targets":
        return None
    return parts[2]


def test_targets_import_only_the_core_and_the_host_layer() -> None:
    """Issue 27: the host lowering and JIT that nvgpu, rdu and mncore reuse is `accel.host`,
    not the cpu target: no target imports another, cpu included."""
    bad = []
    for module, deps in GRAPH.items():
        own = _target_of(module)
        if own is None:
            continue
        for dep in deps:
            other = _target_of(dep)
            if other is not None and other != own:
                bad.append(f"{module} -> {dep}")
    assert bad == []


@pytest.mark.parametrize("layer", ["accel.host", "accel.llvm", "accel.options",
                                   "accel.artifact", "accel.runtime"])
def test_lower_layers_import_no_target(layer: str) -> None:
    """The host layer, LLVM, the options table, artifacts and the runtime sit below the
    targets: none of their modules imports a target or the registry (they are handed the
    target, or its settings, by their caller)."""
    bad = [f"{m} -> {d}" for m, deps in FULL_GRAPH.items()
           if m == layer or m.startswith(layer + ".")
           for d in deps if d == "accel.targets" or d.startswith("accel.targets.")]
    assert bad == []


def test_only_the_llvm_layer_imports_llvmlite() -> None:
    """docs/architecture.md: one llvmlite layer (`accel.llvm`): the JIT, AOT, PTX, the
    cache's host facts and the passes' ISA queries all go through it."""
    users = sorted(m for m in MODULES if any(n == "llvmlite" or n.startswith("llvmlite.")
                                             for n in _raw_imports(m)))
    assert users and all(m.startswith("accel.llvm") for m in users), users


def _own_pass(module: str, target: str | None) -> bool:
    """Target-specific passes (`passes/<target>/`, `passes/<target>_*.py`) may use their
    target's modules (its planner, its rule lists)."""
    return target is not None and (module.startswith(f"accel.passes.{target}.") or
                                   module.startswith(f"accel.passes.{target}_"))


def test_core_imports_no_target_by_name() -> None:
    """Outside the targets only the registry, the tools and the CPU-only entry points may
    name a target's modules (the core dispatches through `accel.targets.get`)."""
    # The dashboard's target pages show each target's own models (sections, layouts,
    # ptxas reports): viewers of a target, like the tools.
    allowed_prefixes = ("accel.targets", "accel.tools", "accel.dashboard")
    # threads, lazy API names; `accel.rdu` re-exports the rdu target's model annotations
    # (`accel.rdu.hypersection`), the spelling SambaFlow users expect; `accel.mlsdk` the
    # mncore target's device/context API, MLSDK's spelling.
    allowed = {"accel.compiled_module", "accel", "accel.dynamo", "accel.rdu", "accel.mlsdk"}
    bad = [f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
           if _target_of(d) not in (None,) and _target_of(d) != "cpu"
           and not m.startswith(allowed_prefixes) and m not in allowed
           and not _own_pass(m, _target_of(d))]
    assert bad == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("accel.frontend")))
def test_frontend_imports_no_target_and_no_cache(module: str) -> None:
    assert not {d for d in GRAPH[module]
                if d.startswith("accel.targets") or d in ("accel.cache", "accel.front_cache",
                                                          "accel.api")}


def test_cache_imports_nothing_above_the_runtime() -> None:
    allowed = {"accel", "accel.diagnostics", "accel.versions", "accel.llvm.engine"}
    assert {d for d in GRAPH["accel.cache"] if d not in allowed
            and not d.startswith("accel.runtime")} == set()


def test_only_ir_imports_torch_mlir() -> None:
    users = sorted(m for m in MODULES if any(n == "torch_mlir" or n.startswith("torch_mlir.")
                                             for n in _raw_imports(m)))
    assert users == ["accel.ir"]
