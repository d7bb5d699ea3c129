"""accel.passes: the Python pass API and accel's own passes (one file per pass).

The built-in passes are listed in `accel.passes.builtin`; the registry imports that module by
name on first use (`lookup_pass`, `registered_passes`, `register_pass`), so importing this
package or the pass API imports no pass: pipelines and targets, which passes may use, sit
above the registry, not in a circle with every pass. Plugin files register theirs with
`@register_pass` when `accel-opt --load-pass-plugin=FILE` (or `load_pass_plugin`) imports them.
"""

from __future__ import annotations

from accel.passes.base import (
    FunctionPass,
    ModulePass,
    OptionError,
    Pass,
    PassFailure,
    lookup_pass,
    register_pass,
    registered_passes,
)
from accel.passes.plugins import load_pass_plugin

__all__ = [
    "FunctionPass",
    "ModulePass",
    "OptionError",
    "Pass",
    "PassFailure",
    "load_pass_plugin",
    "lookup_pass",
    "register_pass",
    "registered_passes",
]
