"""The dashboard as files: the app's assets and the data scripts, for `export` and `serve`.

Layout (the same URLs whether exported or served):

    index.html, app/*.js, app/app.css, app/vendor/d3.min.js   the app (package data)
    data/index.js                  window.ACCEL_INDEX: the folders, whether to compare
    data/<fid>/model.js            one folder's model (accel.dashboard.collect)
    data/<fid>/files/<id>.js       one text file of the folder (IR, logs), loaded on demand
    data/compare.js                the comparison (accel.dashboard.compare)
    raw/<fid>/<path>               the folder's files as they are (export: text files and
                                   files up to RAW_LIMIT only)

Data travels as scripts that assign to `window.ACCEL_DATA`, not as fetched JSON: browsers
refuse fetch() from file://, but load scripts, so the exported site opens from disk.
JSON is embedded with `<` escaped, so no string in it can close a script element.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from accel.dashboard.folder import TEXT_LIMIT, Folder
from accel.diagnostics import AccelError

#: Exported raw copies: text files, and other files up to this size (weights are skipped).
RAW_LIMIT = 4 << 20


def js_data(key: str, value: Any) -> bytes:
    """A script that stores `value` under `key` in window.ACCEL_DATA."""
    body = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    body = body.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029",
                                                                             "\\u2029")
    return (f"(window.ACCEL_DATA=window.ACCEL_DATA||{{}})[{json.dumps(key)}]={body};\n"
            ).encode()


def index_script(folders: list[tuple[str, dict[str, Any]]], compare: bool) -> bytes:
    from accel import __version__

    index = {"folders": [{"id": fid, "name": m["name"], "target": m["target"],
                          "kind": m["kind"]} for fid, m in folders],
             "compare": compare, "version": __version__}
    body = json.dumps(index, ensure_ascii=False).replace("<", "\\u003c")
    return f"window.ACCEL_INDEX={body};\n".encode()


def file_script(fid: str, folder: Folder, file: dict[str, Any]) -> bytes | None:
    """data/<fid>/files/<id>.js of a text file; None when it is not one (or too big)."""
    if not file.get("text"):
        return None
    text = folder.text(file["path"], TEXT_LIMIT)
    if text is None:
        return None
    return js_data(f"{fid}/file/{file['id']}", text)


def assets() -> dict[str, bytes]:
    """The app's files by site path: index.html and app/... (the package's static/)."""
    root = resources.files("accel.dashboard").joinpath("static")
    found: dict[str, bytes] = {}

    def walk(node: Any, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif not child.name.startswith("."):
                found[f"{prefix}{child.name}"] = child.read_bytes()

    walk(root, "")
    return {("index.html" if name == "index.html" else f"app/{name}"): data
            for name, data in found.items()}


def site_files(folders: list[tuple[str, Folder, dict[str, Any]]],
               compare: dict[str, Any] | None) -> Iterator[tuple[str, bytes]]:
    """Every file of the exported site (path, bytes)."""
    yield from assets().items()
    yield "data/index.js", index_script([(fid, m) for fid, _, m in folders], compare is not None)
    if compare is not None:
        yield "data/compare.js", js_data("compare", compare)
    for fid, folder, model in folders:
        yield f"data/{fid}/model.js", js_data(f"{fid}/model", model)
        for file in model["files"]:
            script = file_script(fid, folder, file)
            if script is not None:
                yield f"data/{fid}/files/{file['id']}.js", script
            if file["text"] or file["bytes"] <= RAW_LIMIT:
                data = folder.read_bytes(file["path"], max(RAW_LIMIT, TEXT_LIMIT))
                if data is not None:
                    yield f"raw/{fid}/{file['path']}", data


def export(folders: list[tuple[str, Folder, dict[str, Any]]], compare: dict[str, Any] | None,
           out: Path) -> int:
    """Write the static site into `out`; returns the number of files written."""
    out = Path(os.path.abspath(out))
    for _, folder, _ in folders:
        if out == folder.root or folder.root in out.parents:
            raise AccelError(f"-o {out}: the site must not be written into the folder it "
                             f"shows ({folder.root})")
    if out.exists():
        if not out.is_dir():
            raise AccelError(f"-o {out}: exists and is not a folder")
        if any(out.iterdir()) and not (out / "data" / "index.js").is_file():
            raise AccelError(f"-o {out}: folder is not empty and is not an accel-dashboard "
                             "site; give a new or empty folder")
        for old in ("data", "raw", "app"):
            shutil.rmtree(out / old, ignore_errors=True)
    count = 0
    try:
        for rel, data in site_files(folders, compare):
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            count += 1
    except OSError as err:
        raise AccelError(f"-o {out}: cannot write the site: {err.strerror or err}") from None
    return count
