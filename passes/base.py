"""The Python pass API: `ModulePass`, `FunctionPass`, `register_pass`, typed options.

A pass is a small frozen dataclass whose fields are its options and whose docstring's first
line is its summary::

    @register_pass
    @dataclass(frozen=True)
    class TagFuncs(ModulePass):
        \"\"\"Adds a unit attribute `tag` to every func.func.\"\"\"
        name = "tag-funcs"
        attr: str = "tag"
        def apply(self, module) -> None: ...

Once registered, `tag-funcs{attr=foo}` works in `accel-opt` (short and `--pass-pipeline`
forms), in `accel.pipeline.run_pipeline`, and from Python (`TagFuncs(attr="foo")(module)`).
Options use MLIR's syntax: space-separated `key=value`, bare `key` for a true bool, values
quoted with '' or "" or braced with {} when they contain spaces, lists comma-separated.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import importlib
import math
import re
import typing
from collections.abc import Iterator
from typing import Any, ClassVar

from accel.diagnostics import AccelError, PassFailure
from accel.ir import Location, Module, Operation, OpView, ir, walk

_PASS_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")


class Pass:
    """Base of all accel passes. Subclasses are frozen dataclasses; fields are options."""

    #: Registry key and pipeline spelling, e.g. "tag-funcs".
    name: ClassVar[str] = ""
    #: The op kind `apply` receives.
    anchor: ClassVar[str] = "builtin.module"

    def apply(self, op: Operation) -> None:  # pragma: no cover - abstract
        raise NotImplementedError(f"pass '{self.name}' does not implement apply()")

    # -- helpers for pass authors -------------------------------------------------------
    @staticmethod
    def fail(where: Operation | OpView | Location | None, message: str) -> typing.NoReturn:
        """Fail the pass with an error located at `where` (an op or a location)."""
        raise PassFailure(message, _location_of(where))

    @classmethod
    def summary(cls) -> str:
        """First line of the docstring."""
        doc = (cls.__dict__.get("__doc__") or "").strip()
        if doc.startswith(f"{cls.__name__}("):  # @dataclass made this up: no real docstring
            return ""
        return doc.splitlines()[0].strip() if doc else ""

    @classmethod
    def options(cls) -> list[OptionInfo]:
        """The typed options, in declaration order."""
        return list(_options_of(cls))

    def option_string(self) -> str:
        """This instance's options in pipeline syntax, e.g. `{attr=foo}` ('' if none)."""
        # MLIR spells option names with dashes.
        parts = [f"{o.name.replace('_', '-')}={format_value(getattr(self, o.name))}"
                 for o in self.options()]
        return "{" + " ".join(parts) + "}" if parts else ""

    def pipeline_text(self) -> str:
        return self.name + self.option_string()

    def __call__(self, module: Module | Operation) -> None:
        """Run this pass alone on `module` (raises `AccelError` on failure)."""
        from accel.pass_run import PythonStep, run_steps

        run_steps(module, [PythonStep((), self)])


@functools.cache
def _options_of(cls: type[Pass]) -> tuple[OptionInfo, ...]:
    """`cls.options()`, worked out once per class: `get_type_hints` evaluates every
    annotation's string, and every pipeline run instantiates its passes again."""
    hints = typing.get_type_hints(cls)
    return tuple(OptionInfo(f.name, hints.get(f.name, str), _field_default(f), _field_help(f))
                 for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                 if f.init)


class ModulePass(Pass):
    """A pass whose `apply(module)` receives the `builtin.module` operation."""

    anchor: ClassVar[str] = "builtin.module"


class FunctionPass(Pass):
    """A pass whose `apply(func)` runs once per `func.func` (nested under the module)."""

    anchor: ClassVar[str] = "func.func"


# -- options ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class OptionInfo:
    """One pass option: name, Python type, default, help text."""

    name: str
    type: Any
    default: Any
    help: str = ""

    def describe(self) -> str:
        default = "" if self.default is _REQUIRED else f" = {format_value(self.default)}"
        return f"{self.name}: {type_name(self.type)}{default}"


class _Required:
    def __repr__(self) -> str:
        return "<required>"


_REQUIRED: Any = _Required()


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return _REQUIRED


def _field_help(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("help", "")) if f.metadata else ""


def type_name(tp: Any) -> str:
    """Readable type name: `int`, `list[str]`, `enum{a|b}`."""
    origin = typing.get_origin(tp)
    if origin in (list, tuple):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return f"list[{type_name(args[0]) if args else 'str'}]"
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " | ".join(type_name(a) for a in typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "enum{" + "|".join(str(m.value) for m in tp) + "}"
    if typing.get_origin(tp) is typing.Literal:
        return "enum{" + "|".join(str(a) for a in typing.get_args(tp)) + "}"
    return getattr(tp, "__name__", str(tp))


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, list | tuple):
        return ",".join(format_value(v) for v in value)
    if value is None:
        return "none"
    text = str(value)
    return f'"{text}"' if (" " in text or not text) else text


def _convert(raw: str, tp: Any) -> Any:
    """Convert one option value string to `tp`; raises ValueError on bad input."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = typing.get_args(tp)
        if type(None) in args and raw.lower() in ("none", ""):
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return _convert(raw, arg)
            except ValueError:
                continue
        raise ValueError
    if origin is typing.Literal:
        for choice in typing.get_args(tp):
            if str(choice) == raw:
                return choice
        raise ValueError
    if origin in (list, tuple):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        item = args[0] if args else str
        items = [] if raw == "" else [_convert(p.strip(), item) for p in _split_list(raw)]
        return tuple(items) if origin is tuple else items
    if tp is bool:
        low = raw.lower()
        if low in ("true", "1", "on", "yes"):
            return True
        if low in ("false", "0", "off", "no"):
            return False
        raise ValueError
    if tp is int:
        return _int_value(raw)
    if tp is float:
        if not _FLOAT.fullmatch(raw) or not math.isfinite(float(raw)):
            raise ValueError
        return float(raw)
    if tp is str:
        return raw
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if raw in (str(member.value), member.name):
                return member
        raise ValueError
    raise ValueError


#: Option numbers are plain ASCII: int() and float() would also take `1_0` and other
#: scripts' digits, which no other tool reads the same way.
_INT = re.compile(r"[+-]?(?:[0-9]+|0x[0-9a-fA-F]+)")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: Int options end up as i64 attributes and loop bounds in the IR.
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1


class _OutOfRange(ValueError):
    pass


def _int_value(raw: str) -> int:
    if not _INT.fullmatch(raw):
        raise ValueError
    value = int(raw, 0 if "x" in raw else 10)
    if not INT_MIN <= value <= INT_MAX:
        raise _OutOfRange(f"{raw} is out of range (min {INT_MIN}, max {INT_MAX})")
    return value


def _split_list(raw: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in raw:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    out.append(cur)
    return out


def split_options(text: str) -> Iterator[tuple[str, str | None]]:
    """Split MLIR option text `a=1 b="x y" c={1,2} d` into (key, value-or-None) pairs."""
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return
        start = i
        while i < n and not text[i].isspace() and text[i] != "=":
            i += 1
        key = text[start:i]
        if i >= n or text[i] != "=":
            yield key, None
            continue
        i += 1
        if i < n and text[i] in "'\"":
            quote = text[i]
            end = text.find(quote, i + 1)
            if end < 0:
                raise ValueError(f"unterminated quote in value of option '{key}'")
            yield key, text[i + 1 : end]
            i = end + 1
            continue
        if i < n and text[i] == "{":
            depth, j = 0, i
            while j < n:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            if depth:
                raise ValueError(f"unbalanced '{{' in value of option '{key}'")
            yield key, text[i + 1 : j]
            i = j + 1
            continue
        start = i
        while i < n and not text[i].isspace():
            i += 1
        yield key, text[start:i]


def instantiate(cls: type[Pass], option_text: str) -> Pass:
    """Build a pass instance from its option text; errors list the valid options."""
    infos = {o.name: o for o in cls.options()}
    # MLIR spells options with dashes; dataclass fields use underscores.
    lookup = {**infos, **{k.replace("_", "-"): v for k, v in infos.items()}}
    kwargs: dict[str, Any] = {}
    try:
        pairs = list(split_options(option_text))
    except ValueError as err:
        raise OptionError(cls, str(err)) from None
    for key, raw in pairs:
        info = lookup.get(key)
        if info is None:
            close = difflib.get_close_matches(key, list(lookup), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise OptionError(cls, f"unknown option '{key}'{hint}")
        if raw is None:
            if info.type is not bool:
                needs = f"option '{info.name}' needs a value ({type_name(info.type)})"
                raise OptionError(cls, needs)
            raw = "true"
        try:
            kwargs[info.name] = _convert(raw, info.type)
        except _OutOfRange as err:
            raise OptionError(cls, str(err), option=key) from None
        except (ValueError, TypeError):
            raise OptionError(
                cls, f"bad value '{raw}' for option '{info.name}' (expected {type_name(info.type)})"
            ) from None
    missing = [o.name for o in infos.values() if o.default is _REQUIRED and o.name not in kwargs]
    if missing:
        raise OptionError(cls, f"missing required option(s): {', '.join(missing)}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as err:
        raise OptionError(cls, str(err)) from None


class OptionError(AccelError):
    """Bad pass options; the message lists the valid ones with types and defaults."""

    def __init__(self, cls: type[Pass], message: str, option: str | None = None):
        opts = cls.options()
        valid = "; ".join(o.describe() for o in opts) if opts else "none"
        what = f"option '{option}' of pass '{cls.name}'" if option else f"pass '{cls.name}'"
        super().__init__(f"{what}: {message}; valid options: {valid}")


# -- registry -----------------------------------------------------------------------------
_REGISTRY: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make `cls` available by its `name` everywhere passes are named."""
    if not (isinstance(cls, type) and issubclass(cls, Pass)):
        raise TypeError("@register_pass expects a subclass of accel.passes.Pass")
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"pass class {cls.__name__} must be a @dataclass(frozen=True)")
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"pass class {cls.__name__} must be frozen: @dataclass(frozen=True)")
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not _PASS_NAME.match(name):
        raise TypeError(f"pass class {cls.__name__} needs a kebab-case `name`, got {name!r}")
    if not cls.summary():
        raise TypeError(f"pass class {cls.__name__} needs a docstring (its summary)")
    _check_not_upstream(cls, name)
    if not cls.__module__.startswith("accel.passes."):
        # A plugin's name is checked against every built-in. Not for a built-in itself:
        # imported on its own (a test importing its module) it would import the others
        # while half-initialised, and one that imports it back (conv_kernels) would fail.
        _load_builtins()
    old = _REGISTRY.get(name)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(
            f"pass name '{name}' is already registered by {old.__module__}.{old.__qualname__}"
        )
    cls.options()  # resolve type hints now: a bad annotation fails at registration
    _REGISTRY[name] = cls
    return cls


def _check_not_upstream(cls: type[Pass], name: str) -> None:
    """A pass may not take an upstream pass's name: pipelines would run one where the
    other was meant, depending on which is looked up first."""
    try:
        from accel.upstream_passes import get_upstream_pass
    except ImportError:  # pragma: no cover - the catalogue ships with accel
        return
    upstream = get_upstream_pass(name)
    if upstream is not None:
        raise ValueError(
            f"pass name '{name}' of class {cls.__qualname__} shadows the upstream "
            f"MLIR pass '{name}' ({upstream.summary}); choose another name")


_BUILTINS_LOADED = False


def _load_builtins() -> None:
    """Register the built-in passes (`accel.passes.builtin`) once, imported by name: the
    pass API depends on no pass, so a pass may use modules that run pipelines."""
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True  # first: the built-ins' own @register_pass calls come here
        importlib.import_module("accel.passes.builtin")


def registered_passes() -> dict[str, type[Pass]]:
    """All accel and plugin passes by name (the built-ins registered on first use)."""
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def lookup_pass(name: str) -> type[Pass] | None:
    return registered_passes().get(name)


def defining_op(value: ir.Value, name: str | None = None) -> Operation | None:
    """The op that defines `value` (only if it is a `name` op, when given); None for a block
    argument or another op."""
    owner = value.owner
    if not isinstance(owner, OpView | Operation):
        return None
    # The Operation's name: an OpView's `name` is the op's `name` attribute where it has
    # one (memref.get_global's symbol).
    if name is not None and owner.operation.name != name:
        return None
    return owner.operation


def ops_named(root: Operation | OpView, names: tuple[str, ...] | None = None
              ) -> list[Operation]:
    """Every op under `root` (itself and nested regions, outer first) whose name is in
    `names` (all ops if None). A list, so passes may rewrite while iterating it."""
    found: list[Operation] = []

    def visit(op: Operation) -> ir.WalkResult:
        if names is None or op.name in names:
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    walk(root.operation, visit)
    return found


def replace_with_function_body(op: Operation, helper: Module,
                               operands: list[ir.Value] | None = None) -> None:
    """Replace single-result `op` by the body of `helper`'s first function, whose arguments
    stand for `operands` (default: op's operands) and whose returned value for its result
    (a textual rewrite's inlining: no call, so other functions of the module are left as
    they are)."""
    func = helper.body.operations[0]
    block = func.regions[0].blocks[0]
    values = list(op.operands) if operands is None else operands
    for arg, value in zip(block.arguments, values, strict=True):
        arg.replace_all_uses_with(value)
    body = list(block.operations)
    for inner in body[:-1]:
        inner.operation.move_before(op)
    op.results[0].replace_all_uses_with(body[-1].operands[0])
    op.erase()


def is_inside(op: Operation | OpView, ancestor: Operation | OpView) -> bool:
    """`op` is `ancestor` or nested in one of its regions."""
    current: Operation | None = op.operation
    target = ancestor.operation
    while current is not None:
        if current == target:
            return True
        parent = current.parent
        current = parent.operation if parent is not None else None
    return False


def _location_of(where: Operation | OpView | Location | None) -> Location | None:
    if where is None or isinstance(where, Location):
        return where
    op = getattr(where, "operation", where)
    return op.location
