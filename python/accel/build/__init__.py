"""The accel-compile job as a library: settings (option.json, flags, the options table),
model files, and writing the artifact folder (`accel.tools.accel_compile` is the thin CLI)."""

PROG = "accel-compile"
