"""`Settings`: the options of one compile, resolved once, frozen.

Each entry point (`accel.compile`, `@accel.jit`, `torch.compile(backend="accel")`,
`accel.compile_train_step`, `accel.compile_mlir`, accel-compile and its option.json)
resolves what it was given exactly once (`resolve`: `merge`'s defaults <
preset < target file < given, then the target's `check`) and hands the `Settings` down.
Everything below reads it like a dict and never resolves again: `accel.compile` given a
`Settings` takes it as it is, and so does the cpu target's `compile_mlir`. An emulated
target (rdu, mncore, nvgpu's host fallback) derives the settings of its host program with
`for_host`, not by building an options dict by hand.

    s = resolve({"target": "rdu", "preset": "o1"})
    s["sectioning"], s.target, s.given        # 'o1', 'rdu', frozenset({'target', 'preset'})
    host = s.for_host("opt_level", "cache")     # cpu settings with the rdu compile's values
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from accel import options as table
from accel import targets
from accel.diagnostics import AccelError

#: Settings accel adds for a target that are not options (`accel.options.INTERNAL_SETTINGS`
#: and the `filename` diagnostics name): carried, not validated.
INTERNAL = (*table.INTERNAL_SETTINGS, "filename")


class Settings(Mapping[str, Any]):
    """Resolved options: every option that applies to `target`, validated, plus internal
    settings. Immutable; `replace` and `for_host` make new ones. `given` names the options
    the user set (the rest are defaults, the preset's or a target file's)."""

    __slots__ = ("_values", "given")

    def __init__(self, values: Mapping[str, Any], given: frozenset[str] = frozenset()):
        object.__setattr__(self, "_values", MappingProxyType(dict(values)))
        object.__setattr__(self, "given", frozenset(given))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Settings are frozen: use replace()")

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Settings({dict(self._values)!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with a model (torch.compile caches)
        return (Settings, (dict(self._values), self.given))

    @property
    def target(self) -> str:
        return self._values["target"]

    def replace(self, **changes: Any) -> Settings:
        """A copy with `changes`: table options validated one by one (they must apply to
        this target), internal settings (`filename`, `graph_phase`, ...) carried as they
        are. The preset, target and every other value stay resolved: nothing is merged
        again."""
        for key, value in changes.items():
            if key in INTERNAL:
                continue
            if key not in self._values:
                where = table.OPTIONS[key].scope if key in table.OPTIONS else "no target"
                raise table.OptionError(f"option '{key}' applies to {where}, not "
                                        f"{self.target}" if key in table.OPTIONS
                                        else table.unknown_option(key))
            choices = _target_choices(self.target).get(key)
            table.check_value(table.OPTIONS[key], value, choices)
        return Settings({**self._values, **changes}, self.given | (set(changes) - set(INTERNAL)))

    def view(self, scope: str) -> dict[str, Any]:
        """The values of one scope's options (`common`, `aot`, `train`, a target's name:
        its own options, those it shares included)."""
        return {k: v for k, v in self._values.items() if k in table.OPTIONS and
                (table.OPTIONS[k].scope == scope or scope in table.OPTIONS[k].also)}

    def code_options(self) -> dict[str, Any]:
        """The values that change generated code (the compile-cache key's part)."""
        return table.code_options(self)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def for_host(self, *carried: str, **changes: Any) -> Settings:
        """The cpu target's settings for this compile's host program (`host_settings`):
        this compile's values of the `carried` options, then `changes`."""
        return host_settings(self, *carried, **changes)


def host_settings(source: Mapping[str, Any], *carried: str, **changes: Any) -> Settings:
    """The cpu target's settings for an emulated target's host program: the cpu defaults
    and default preset, `source`'s values of the `carried` options (those it has), then
    `changes` (internal settings such as `filename` included). Each value given is
    validated and the cpu target checks the whole (it refuses what it cannot honour); no
    options are resolved. `Settings.for_host` is this with the compile's own settings;
    loading an artifact passes its manifest's options."""
    values = dict(_cpu_baseline())
    values.update({k: source[k] for k in carried if k in source})
    values.update(changes)
    set_here = {k for k in (*carried, *changes) if k in values and k not in INTERNAL}
    for key in set_here:
        if key not in table.OPTIONS or key not in _cpu_baseline():
            raise table.OptionError(f"option '{key}' does not apply to the host (target cpu)")
        table.check_value(table.OPTIONS[key], values[key], _target_choices("cpu").get(key))
    host = Settings(values, frozenset(set_here))
    targets.get("cpu").check(host)
    return host


_CPU_BASELINE: dict[str, Any] = {}


def _cpu_baseline() -> Mapping[str, Any]:
    """The cpu target's options at their defaults under its default preset (computed once
    per process: data, not a resolution of anyone's options)."""
    if not _CPU_BASELINE:
        cpu = targets.get("cpu")
        values = {o.name: o.default for o in table.for_target("cpu")}
        if cpu.default_preset is not None:
            values.update(cpu.presets()[cpu.default_preset])
        values["preset"] = cpu.default_preset
        _CPU_BASELINE.update(values)
    return _CPU_BASELINE


def _target_choices(name: str) -> dict[str, tuple[Any, ...]]:
    return {"target": targets.names(), "device": targets.get(name).devices()}


def resolve(options: Mapping[str, Any] | None, *, check: bool = True) -> Settings:
    """`options` (None, a dict, or `Settings`, returned as they are) resolved once: the
    options table's merge and validation (`merge`), the AOT refusal of a
    target without libraries and the target's own `check`, before any work."""
    if isinstance(options, Settings):
        return options
    internal: dict[str, Any] = {}
    given: Any = options
    if isinstance(options, Mapping):  # a target's internal settings ride along unresolved
        internal = {k: v for k, v in options.items() if k in INTERNAL}
        given = table.named({k: v for k, v in options.items() if k not in INTERNAL})
    resolved = merge(given)
    settings = Settings({**resolved, **internal}, frozenset(given or ()))
    target = targets.get(settings.target)
    if not check:
        return settings
    if settings.get("aot") and not target.has_aot:  # before the model is exported
        from accel.diagnostics import NotSupportedYet

        raise NotSupportedYet(targets.no_aot(target.name))
    target.check(settings)
    return settings


def merge(options: Mapping[str, Any] | None, *, extra: Mapping[str, Any] | None = None
          ) -> dict[str, Any]:
    """Defaults < the target's preset < `options`, every value validated.

    The result has every option that applies to the chosen target, plus `preset` resolved to
    the preset's name. `extra` are internal settings passed through unvalidated (e.g. the
    `filename` of compile_mlir's diagnostics).
    """
    if options is not None and not isinstance(options, Mapping):
        raise table.OptionTypeError(f"options must be a dict, got {type(options).__name__}")
    given = table.named(options or {})
    for key in given:
        if table.OPTIONS[key].scope == "torch_compile":
            raise table.OptionError(f"option '{key}' applies to torch.compile("
                                    f"backend=\"accel\") only")
    name = table.check_value(table.OPTIONS["target"], given.get("target", "cpu"), targets.names())
    target = targets.get(name)
    applicable = {o.name: o for o in table.for_target(name)}
    for key in given:
        if key not in applicable:
            where = " and ".join((table.OPTIONS[key].scope, *table.OPTIONS[key].also))
            raise table.OptionError(f"option '{key}' applies to target {where}, not {name}")
    preset_name = table.check_value(table.OPTIONS["preset"], given.get("preset"))
    presets = target.presets()
    if preset_name is None:
        preset_name = target.default_preset
    if preset_name is not None and preset_name not in presets:
        raise table.OptionError(f"option 'preset': target {name} has no preset "
                                f"{preset_name!r} (choose from {', '.join(presets) or 'none'})")
    merged = {k: o.default for k, o in applicable.items()}
    if preset_name is not None:
        merged.update(presets[preset_name])
    merged.update(target.file_options({**merged, **given}))
    merged.update(given)
    merged["target"], merged["preset"] = name, preset_name
    choices = _target_choices(name)
    for key, value in merged.items():
        table.check_value(applicable[key], value, choices.get(key))
    merged.update(extra or {})
    return merged


def shown_default(option: table.Option) -> str:
    """`option`'s default as --help names it: for a target's own option, the value under
    that target's default preset where the preset sets it (mncore's O1 picks its scheduler
    through option_json), e.g. "auto_recompute_sa (preset O1)"."""
    if option.scope in targets.names():
        try:
            resolved = merge({"target": option.scope})
        except AccelError:  # a target whose presets cannot resolve here: the table's
            resolved = {}
        value = resolved.get(option.name, option.default)
        if value != option.default:
            return f"{table._show(value)} (preset {resolved['preset']})"
    return table._show(option.default)


def help_table(target: str) -> str:
    """The options of `target` as text for --help and docs: name, default, allowed, doc."""
    lines = []
    for o in table.for_target(target):
        spell = ", ".join(o.flags)
        lines.append(f"  {o.name} ({spell}; default {shown_default(o)}; {o.allowed()})")
        lines.append(f"      {o.doc}")
    return "\n".join(lines)


__all__ = ["INTERNAL", "Settings", "help_table", "host_settings", "merge", "resolve",
           "shown_default"]
