"""Files and folders a user names (an option's JSON file, an output folder): read or created
here, so that an OS or JSON failure is one `AccelError` line naming the path, the same
wording in every target."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from accel.diagnostics import AccelError


def read_json(path: str | Path, option: str) -> Any:
    """The JSON document in `path`, the file that option `option` names."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise AccelError(f"option '{option}': cannot read '{path}' ({err.strerror})") from None
    except ValueError as err:
        raise AccelError(f"{path}: not valid JSON: {err}") from None


def make_folder(path: str | Path, what: str) -> Path:
    """`path` as a `Path`, created with its parents if missing; `what` names it in the error
    ("the AOT output folder")."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AccelError(f"cannot create {what} '{out}': {err.strerror or err}") from None
    return out
