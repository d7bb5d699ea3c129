"""A cheap fingerprint of a model *before* exporting it: the warm start's cache key.

`torch.export` alone costs about a second in a new process (importing it, then tracing), so
a cache hit keyed on the exported program (`accel.frontend.fingerprint`) can never be fast.
`model_fingerprint(model, inputs)` instead hashes what the traced program is made of, read
straight from the module:

- the code: every method of every class in the module tree (and of objects they hold), and
  every function or class those methods reach through their globals, as code objects
  (bytecode, constants, names), recursively; code of installed packages and the standard
  library (torch, transformers, ...) is keyed by the package's version instead of walked;
- the state: every attribute of every submodule (hyper-parameters, config objects, flags
  such as `training`), each parameter and buffer (name, dtype, shape, strides, aliasing and
  a SHA-256 of its values), and plain tensor attributes the same way;
- the call: each input's dtype, shape, strides and device, the grad mode, torch's version.

Module-level objects the code reads that are neither functions, classes nor plain data
(locks, loggers, sentinels) are keyed by their type only. Anything else it cannot describe
safely (hooks, C extension objects) makes it return None: the export path then runs.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import sys
import sysconfig
import types
from typing import Any

import numpy as np

from accel.runtime.weights import numpy_view

#: Above this many bytes of parameters and buffers hashing costs about what it saves.
MAX_STATE_BYTES = 256 << 20
#: Always keyed by version (compiled modules without a file among them).
_VERSIONED = ("builtins", "torch", "numpy")
_SIMPLE = (type(None), bool, int, float, complex, str, bytes)


class Unhashable(Exception):
    """Something in the model that the fingerprint cannot describe safely."""


class _Hasher:
    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.digest = hashlib.sha256()
        self.seen: dict[int, int] = {}  # id -> visit number (shared objects, cycles)
        #: Objects whose ids are in `seen`, kept alive so that no id is reused meanwhile.
        self.keep: list[Any] = []
        self.classes: set[type] = set()
        self.state_bytes = 0

    def put(self, text: str) -> None:
        self.digest.update(text.encode())
        self.digest.update(b"\0")

    # -- values ---------------------------------------------------------------------------
    def value(self, v: Any, depth: int = 0) -> None:
        torch = self.torch
        if depth > 40:
            raise Unhashable("too deeply nested")
        if isinstance(v, _SIMPLE):
            self.put(f"{type(v).__name__}:{v!r}")
            return
        if isinstance(v, torch.dtype | torch.device | torch.Size | torch.memory_format |
                      torch.layout):
            self.put(f"{type(v).__name__}:{v}")
            return
        key = id(v)
        if key in self.seen:
            self.put(f"ref:{self.seen[key]}")
            return
        self.seen[key] = len(self.seen)
        self.keep.append(v)
        if isinstance(v, torch.Tensor):
            self.tensor(v)
        elif isinstance(v, list | tuple):
            self.put(f"{type(v).__name__}[{len(v)}]")
            for item in v:
                self.value(item, depth + 1)
        elif isinstance(v, dict):
            self.put(f"dict[{len(v)}]")
            for k in sorted(v, key=repr):
                self.value(k, depth + 1)
                self.value(v[k], depth + 1)
        elif isinstance(v, set | frozenset):
            self.put(f"set:{sorted(map(repr, v))}")
        elif isinstance(v, types.FunctionType | types.MethodType):
            self.function(v, depth)
        elif isinstance(v, type):
            self.klass(v, depth)
        elif isinstance(v, types.ModuleType):
            self.put(f"module:{v.__name__}")
        elif hasattr(v, "__dict__") and not isinstance(v, types.BuiltinFunctionType):
            self.klass(type(v), depth + 1)
            # `..._hash` attributes hold identity hashes (seeded per process), not settings.
            self.value({k: x for k, x in vars(v).items()
                        if not (isinstance(k, str) and k.endswith("_hash"))}, depth + 1)
        elif _versioned(getattr(type(v), "__module__", "")):  # e.g. an enum of a library
            self.put(f"{type(v).__module__}.{type(v).__qualname__}:{_stable(v)}")
        else:
            raise Unhashable(f"cannot fingerprint a {type(v).__qualname__}")

    def tensor(self, t: Any, values: bool = True) -> None:
        if t.device.type != "cpu" or t.layout != self.torch.strided or t.is_quantized:
            raise Unhashable("non-CPU or non-strided tensor")
        self.put(f"T({t.dtype},{tuple(t.shape)},{t.stride()},{t.requires_grad},"
                 f"{t.storage_offset()})")
        if not values:
            return
        self.state_bytes += t.numel() * t.element_size()
        if self.state_bytes > MAX_STATE_BYTES:
            raise Unhashable("too much state to hash")
        self.digest.update(numpy_view(t.detach().contiguous()).reshape(-1).view(np.uint8))

    # -- code -----------------------------------------------------------------------------
    def code(self, co: types.CodeType, globals_: dict[str, Any], depth: int) -> None:
        self.put(f"code:{co.co_name}:{co.co_argcount}:{co.co_kwonlyargcount}:{co.co_flags}")
        self.digest.update(co.co_code)
        self.put(repr(co.co_names))
        for const in co.co_consts:
            if isinstance(const, types.CodeType):
                self.code(const, globals_, depth + 1)
            else:
                self.put(_stable(const))
        for name in co.co_names:  # the globals this code may read
            if name in globals_:
                target = globals_[name]
                if isinstance(target, types.ModuleType):
                    self.put(f"global {name}: module {target.__name__}")
                elif isinstance(target, types.FunctionType | type) or _plain(target):
                    self.put(f"global {name}")
                    self.value(target, depth)  # deduplicated: no depth needed
                else:  # locks, loggers, sentinels: keyed by their type (see the docstring)
                    self.put(f"global {name}: {type(target).__module__}."
                             f"{type(target).__qualname__}")

    def function(self, fn: Any, depth: int) -> None:
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None or _library_file(code.co_filename):  # keyed by the package version
            module = getattr(fn, "__module__", "") or ""
            self.put(f"fn:{_library(module)}:{module}.{getattr(fn, '__qualname__', '?')}")
            return
        self.put(f"fn:{getattr(fn, '__qualname__', '?')}")
        self.code(fn.__code__, fn.__globals__, depth)
        for default in (fn.__defaults__ or ()):
            self.value(default, depth + 1)
        for cell in (fn.__closure__ or ()):
            try:
                self.value(cell.cell_contents, depth + 1)
            except ValueError:  # an empty cell
                self.put("empty-cell")

    def klass(self, cls: type, depth: int) -> None:
        self.put(f"class:{_library(cls.__module__)}:{cls.__module__}.{cls.__qualname__}")
        for base in cls.__mro__:
            if base is object or base in self.classes:
                continue
            self.classes.add(base)  # library methods are keyed by version in `function`
            for name, member in sorted(vars(base).items()):
                if isinstance(member, staticmethod | classmethod):
                    member = member.__func__
                if isinstance(member, property):
                    member = member.fget
                if isinstance(member, types.FunctionType):
                    self.put(f"method {name}")
                    self.function(member, depth)
                elif isinstance(member, _SIMPLE):
                    self.put(f"attr {name}={member!r}")


def _plain(v: Any, depth: int = 0) -> bool:
    """Plain data: simple values and tuples/lists/dicts/sets of them."""
    if isinstance(v, _SIMPLE):
        return True
    if depth > 4:
        return False
    if isinstance(v, list | tuple | set | frozenset):
        return all(_plain(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(_plain(k, depth + 1) and _plain(x, depth + 1) for k, x in v.items())
    return False


@functools.cache
def _library(module: str) -> str | None:
    """`name==version` when `module` comes from an installed package or the standard
    library (its code is keyed by that version, not walked), else None (user code)."""
    top = module.split(".", 1)[0]
    if not top or top in sys.builtin_module_names or top in _VERSIONED:
        return top or "builtins"
    found = sys.modules.get(top)
    if not _library_file(getattr(found, "__file__", None) or ""):
        return None
    version = getattr(found, "__version__", None)
    if not isinstance(version, str):
        try:
            version = importlib.metadata.version(top)
        except (importlib.metadata.PackageNotFoundError, ValueError):
            version = sys.version.split()[0]  # the standard library
    return f"{top}=={version}"


def _versioned(module: str) -> bool:
    return _library(module) is not None


@functools.cache
def _roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({paths[k] + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def _library_file(filename: str) -> bool:
    """Code from the standard library or an installed package (not the user's files: a
    class made by `exec` or in a notebook says "builtins" or "__main__" as its module)."""
    return filename.startswith(_roots()) or filename.startswith("<frozen ")


def _stable(const: Any) -> str:
    """repr without set order (hash-seed dependent) for code constants."""
    if isinstance(const, frozenset | set):
        return "{" + ",".join(sorted(_stable(c) for c in const)) + "}"
    if isinstance(const, tuple):
        return "(" + ",".join(_stable(c) for c in const) + ")"
    return repr(const)


def model_fingerprint(model: Any, inputs: tuple[Any, ...], func_name: str, *,
                      state_values: bool = True) -> str | None:
    """SHA-256 of the model's code, state and call signature, or None when something in it
    cannot be described safely (then only the export path's fingerprint is used).

    `state_values=False` leaves the parameters' and buffers' values out (their dtypes,
    shapes, strides, aliasing and `requires_grad` stay): for a train step, whose graphs take
    them as inputs. Other tensor attributes are still hashed with their values (they become
    constants of the graphs)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return None
    h = _Hasher(torch)
    try:
        h.put(f"torch {torch.__version__} {torch.version.git_version} {func_name} "
              f"grad={torch.is_grad_enabled()}")
        if torch.nn.modules.module._global_forward_hooks or \
                torch.nn.modules.module._global_forward_pre_hooks:
            return None
        for name, module in model.named_modules(remove_duplicate=False):
            if module._forward_hooks or module._forward_pre_hooks or \
                    getattr(module, "_state_dict_hooks", None):
                return None
            h.put(f"module {name}")
            h.klass(type(module), 0)
            attrs = {k: v for k, v in vars(module).items()
                     if k not in ("_parameters", "_buffers", "_modules") and
                     not (k.endswith("_hooks") or k.endswith("_hooks_with_kwargs") or
                          k.endswith("_hooks_always_called"))}
            h.value(attrs)
        aliases: dict[tuple[int, Any, tuple[int, ...]], str] = {}
        for kind, named in (("param", model.named_parameters(remove_duplicate=False)),
                            ("buffer", model.named_buffers(remove_duplicate=False))):
            for name, t in named:
                alias = (t.data_ptr(), t.dtype, tuple(t.shape))
                h.put(f"{kind} {name} same-as:{aliases.setdefault(alias, name)}")
                h.tensor(t, values=state_values)
        for i, x in enumerate(inputs):
            h.put(f"input {i}")
            if isinstance(x, torch.Tensor):
                h.put(f"T({x.dtype},{tuple(x.shape)},{x.stride()},{x.device},"
                      f"{x.requires_grad})")
            elif isinstance(x, _SIMPLE):
                h.value(x)
            else:
                return None
    except (Unhashable, RecursionError, AttributeError, TypeError, RuntimeError, ValueError):
        return None
    return h.digest.hexdigest()


def function_fingerprint(fn: Any) -> str | None:
    """SHA-256 of a function's code, defaults, closure and the globals it reads (walked as
    the model's methods are), or None when something in it cannot be described."""
    import torch

    h = _Hasher(torch)
    try:
        h.value(fn)
    except (Unhashable, RecursionError, AttributeError, TypeError, RuntimeError, ValueError):
        return None
    return h.digest.hexdigest()
