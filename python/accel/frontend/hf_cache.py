"""HF transformers' KV caches as pytree nodes, so models that take or return them export.

A decoder with `use_cache=True` (GPT-2's, Llama's and T5's default) returns its keys and
values in a `transformers.cache_utils.Cache` object (`DynamicCache`, `StaticCache`,
`EncoderDecoderCache`), and takes one back for the next step. `torch.export` only passes
containers it knows through ("Found DynamicCache in output, which is not a known type"), so
`register()` teaches torch's pytree every cache class of `transformers.cache_utils`:

- a cache with `layers` (DynamicCache, StaticCache and their subclasses): its leaves are
  the tensors each layer holds (`keys`, `values`, and e.g. StaticCache's
  `cumulative_length`), in attribute-name order; the layer classes and their other
  attributes (sizes, the device, `max_cache_len`, `sliding_window`) are the context, so a
  cache of another layout is another structure;
- `EncoderDecoderCache`: its two caches as children, `is_updated` in the context.

Unflattening rebuilds the objects without running their constructors (no copies of the
tensors: eager's `DynamicLayer.update` would `cat` each one again). A class that something
else already registered (transformers' own `register_dynamic_cache_export_support`) keeps
that registration. Nothing here imports transformers: `register()` acts only once the user
has imported it, so models without HF caches never pay for it.

The context is JSON-able (`treespec_dumps`, for the compile cache and artifact folders):
classes are written by name and read back only from `transformers.` modules, devices and
dtypes as strings.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

#: Classes registered here (by this module), so a second `register()` is a no-op.
_REGISTERED: set[type] = set()
#: Attribute values that go into a context as they are (JSON and == friendly).
_PLAIN = (bool, int, float, str, type(None))


def register(spec_text: str | None = None) -> None:
    """Register every cache class of the imported `transformers.cache_utils` (idempotent;
    nothing happens when transformers was not imported, unless `spec_text`, a saved pytree
    spec about to be read, names one of its classes)."""
    module = sys.modules.get("transformers.cache_utils")
    if module is None and spec_text is not None and "transformers.cache_utils" in spec_text:
        try:
            module = importlib.import_module("transformers.cache_utils")
        except ImportError:
            return
    if module is None:
        return
    base = getattr(module, "Cache", None)
    if not isinstance(base, type):
        return
    for cls in _subclasses(base):
        if cls not in _REGISTERED:
            _register(cls, encoder_decoder=cls.__name__ == "EncoderDecoderCache")


def is_cache(value: Any) -> bool:
    """Whether `value` is a transformers `Cache` object."""
    module = sys.modules.get("transformers.cache_utils")
    base = getattr(module, "Cache", None) if module is not None else None
    return isinstance(base, type) and isinstance(value, base)


def adopt(inputs: Any, result: Any) -> Any:
    """`result` with each cache object in it replaced by the cache of the same class that
    was passed in `inputs`, updated to hold the result's keys and values: eager models
    update the cache they are given and return it, so code that keeps using its own cache
    object (or compares `out.cache is cache`) sees the same."""
    if "transformers.cache_utils" not in sys.modules:
        return result
    from torch.utils._pytree import tree_leaves, tree_map

    given = [c for c in tree_leaves(inputs, is_leaf=is_cache) if is_cache(c)]
    if not given:
        return result
    used: set[int] = set()

    def swap(value: Any) -> Any:
        if not is_cache(value):
            return value
        for cache in given:
            if type(cache) is type(value) and id(cache) not in used:
                used.add(id(cache))
                vars(cache).clear()
                vars(cache).update(vars(value))
                return cache
        return value

    return tree_map(swap, result, is_leaf=is_cache)


def expand_dynamic_shapes(args: tuple[Any, ...], kwargs: dict[str, Any],
                          dynamic_shapes: Any) -> Any:
    """`dynamic_shapes` with a cache's entry given as one dims dict (`{"cache": {2: seq}}`)
    spread over the cache's tensors, in the nested form torch.export wants (one entry per
    tensor: `{2: seq}` where the tensor has that dimension, None otherwise, e.g. for
    StaticCache's 0-d `cumulative_length`). An `EncoderDecoderCache` takes a pair, one
    entry per cache (`[{2: seq}, None]`: the self-attention cache grows, the cross-attention
    one is fixed). Other entries are left as they are."""
    if dynamic_shapes is None or "transformers.cache_utils" not in sys.modules:
        return dynamic_shapes
    register()
    if isinstance(dynamic_shapes, dict):
        return {k: _spread(kwargs[k], v) if k in kwargs else v
                for k, v in dynamic_shapes.items()}
    if isinstance(dynamic_shapes, tuple | list) and len(dynamic_shapes) == len(args):
        return type(dynamic_shapes)(_spread(a, v) for a, v in zip(args, dynamic_shapes,
                                                                   strict=True))
    return dynamic_shapes


def _spread(example: Any, dims: Any) -> Any:
    import torch
    from torch.utils._pytree import SUPPORTED_NODES

    node = SUPPORTED_NODES.get(type(example)) if is_cache(example) else None
    if node is not None and isinstance(dims, list | tuple):
        # One entry per child cache (EncoderDecoderCache: [self-attention, cross-attention]).
        children, _ = node.flatten_fn(example)
        if len(children) == len(dims) and all(is_cache(c) for c in children):
            return [_spread(c, {} if d is None else d)  # None: no dynamic size in it
                    for c, d in zip(children, dims, strict=True)]
        return dims
    if node is None or not isinstance(dims, dict):
        return dims

    def walk(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            fits = all(isinstance(d, int) and -value.dim() <= d < value.dim() for d in dims)
            return dims if fits else None
        if isinstance(value, tuple | list):
            return [walk(v) for v in value]
        node = SUPPORTED_NODES.get(type(value))
        if node is None or not is_cache(value):
            return None
        children, _ = node.flatten_fn(value)
        return [walk(c) for c in children]

    return walk(example)


def _subclasses(base: type) -> list[type]:
    found, todo = [], [base]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def _register(cls: type, *, encoder_decoder: bool) -> None:
    from torch.utils import _pytree

    if cls in _pytree.SUPPORTED_NODES:  # e.g. transformers' own DynamicCache registration
        _REGISTERED.add(cls)
        return
    flatten, unflatten = (_flatten_pair, _unflatten_pair) if encoder_decoder else \
        (_flatten_layers, _unflatten_layers)
    try:
        _pytree.register_pytree_node(
            cls, flatten, unflatten,
            serialized_type_name=f"{cls.__module__}.{cls.__qualname__}",
            to_dumpable_context=_dumpable, from_dumpable_context=_undumpable,
            flatten_with_keys_fn=_keys_pair if encoder_decoder else _keys_layers)
    except ValueError as err:  # registered by someone else meanwhile
        if "already registered" not in str(err):
            raise
    _REGISTERED.add(cls)


def _keys_layers(cache: Any) -> tuple[list[tuple[Any, Any]], Any]:
    """Children named by attribute path (`cache['layers.0.keys']`), for messages and paths."""
    from torch.utils._pytree import MappingKey

    children, context = _flatten_layers(cache)
    _, names, _, layers = context
    keys = list(names)
    for j, (_, layer_names, _) in enumerate(layers):
        keys.extend(f"layers.{j}.{name}" for name in layer_names)
    return [(MappingKey(k), c) for k, c in zip(keys, children, strict=True)], context


def _keys_pair(cache: Any) -> tuple[list[tuple[Any, Any]], Any]:
    from torch.utils._pytree import MappingKey

    children, context = _flatten_pair(cache)
    keys = ("self_attention_cache", "cross_attention_cache")
    return [(MappingKey(k), c) for k, c in zip(keys, children, strict=True)], context


def _split(obj: Any, skip: tuple[str, ...] = ()) -> tuple[tuple[str, ...], list[Any],
                                                          tuple[tuple[str, Any], ...]]:
    """(names of tensor attributes, those tensors, the other attributes as sorted items)."""
    import torch

    names, tensors, static = [], [], []
    for name, value in sorted(vars(obj).items()):
        if name in skip:
            continue
        if isinstance(value, torch.Tensor):
            names.append(name)
            tensors.append(value)
        else:
            static.append((name, value))
    return tuple(names), tensors, tuple(static)


def _flatten_layers(cache: Any) -> tuple[list[Any], Any]:
    names, children, static = _split(cache, skip=("layers",))
    layers = []
    for layer in getattr(cache, "layers", []):
        layer_names, tensors, layer_static = _split(layer)
        children.extend(tensors)
        layers.append((type(layer), layer_names, layer_static))
    return children, (type(cache), names, static, tuple(layers))


def _unflatten_layers(values: Any, context: Any) -> Any:
    cls, names, static, layers = context
    values = list(values)
    cache = cls.__new__(cls)
    vars(cache).update(static)
    vars(cache).update(zip(names, values[:len(names)], strict=True))
    at = len(names)
    built = []
    for layer_cls, layer_names, layer_static in layers:
        layer = layer_cls.__new__(layer_cls)
        vars(layer).update(layer_static)
        vars(layer).update(zip(layer_names, values[at:at + len(layer_names)], strict=True))
        at += len(layer_names)
        built.append(layer)
    cache.layers = built
    return cache


def _flatten_pair(cache: Any) -> tuple[list[Any], Any]:
    updated = tuple(sorted(getattr(cache, "is_updated", {}).items()))
    return [cache.self_attention_cache, cache.cross_attention_cache], (type(cache), updated)


def _unflatten_pair(values: Any, context: Any) -> Any:
    cls, updated = context
    cache = cls.__new__(cls)
    cache.self_attention_cache, cache.cross_attention_cache = values
    cache.is_updated = dict(updated)
    return cache


def _dumpable(context: Any) -> str:
    import json

    return json.dumps(_encode(context))


def _undumpable(text: str) -> Any:
    import json

    return _decode(json.loads(text))


def _encode(value: Any) -> Any:
    """The context as JSON: tagged lists for tuples, classes, devices and dtypes."""
    import torch

    if isinstance(value, type):
        return {"class": f"{value.__module__}:{value.__qualname__}"}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, tuple | list):
        return {"tuple" if isinstance(value, tuple) else "list": [_encode(v) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str | int) for k in value):
        return {"dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, _PLAIN):
        return value
    raise TypeError(f"cannot write a {type(value).__name__} in a cache structure")


def _decode(value: Any) -> Any:
    import torch

    if not isinstance(value, dict):
        if isinstance(value, _PLAIN):
            return value
        raise ValueError("malformed cache structure")
    if "class" in value:
        return _class(value["class"])
    if "device" in value:
        return torch.device(value["device"])
    if "dtype" in value:
        dtype = getattr(torch, str(value["dtype"]), None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"unknown dtype {value['dtype']!r} in a cache structure")
        return dtype
    if "tuple" in value:
        return tuple(_decode(v) for v in value["tuple"])
    if "list" in value:
        return [_decode(v) for v in value["list"]]
    if "dict" in value:
        return {_decode(k): _decode(v) for k, v in value["dict"]}
    raise ValueError("malformed cache structure")


def _class(name: Any) -> type:
    """A class named in a saved structure: only from transformers (the text may come from an
    untrusted artifact, so nothing else is imported)."""
    module_name, _, qualname = str(name).partition(":")
    if not (module_name == "transformers" or module_name.startswith("transformers.")):
        raise ValueError(f"cache structure names a class outside transformers: {name!r}")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ValueError(f"{name!r} is not a class")
    return obj


__all__ = ["adopt", "expand_dynamic_shapes", "is_cache", "register"]
