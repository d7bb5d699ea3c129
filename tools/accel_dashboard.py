"""`accel-dashboard`: accel output folders as pages in a browser (docs/dashboard.md).

    accel-dashboard serve out/mlp [--port 8327] [--host 127.0.0.1]
    accel-dashboard export out/mlp -o site           # then open site/index.html
    accel-dashboard compare out/mlp-rdu out/mlp-mncore [-o site]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from accel.cli import exit_with, version_text
from accel.diagnostics import AccelError

PROG = "accel-dashboard"
DEFAULT_PORT = 8327

DESCRIPTION = """\
Show accel output folders in a web browser: accel-compile folders (cpu, nvgpu, rdu PEF
folders, train steps), artifact folders (CompiledModule.save) and mncore codegen_dirs.

Pages: Summary (command, options and where each came from, hardware model, flops,
estimated or measured time), Phases (status and time of each, the IR written after it),
Graph (every op of the IR, searchable; click one for its section/layer/kernel, producers,
users and IR lines), the target's page (rdu: sections' PCUs/PMUs against the chip's limits,
hypersections, chips and pipeline stages, per-phase limits; mncore: layers, layouts,
relayouts, SRAM over time, scheduler comparison; nvgpu: kernels with launch sizes, shared
memory and registers from ptxas; cpu: functions, vector widths, parallel loops), Timeline
(profile.json and other trace files, or the compiler's estimated schedule, as zoomable
lanes; a button opens the same events in Perfetto when you are online) and Files.

Everything the pages need ships with accel (the d3 library included): no network is used
unless you click "Open in Perfetto". serve binds 127.0.0.1 and serves only the app and the
files under DIR. Errors print as `accel-dashboard: error: ...` and exit 1.
"""

EPILOG = """\
commands:
  serve DIR [--port N] [--host ADDR]   serve the pages at http://ADDR:N/ until Ctrl-C
                                      (default 127.0.0.1:8327; --port 0 picks a free port;
                                      a --host other than loopback serves DIR to the network)
  export DIR -o SITE                   write the pages as static files into SITE (new or
                                      empty, or an earlier export); open SITE/index.html
                                      from disk (file://) or copy it anywhere
  compare DIR1 DIR2 ... [-o SITE]      one model built for several targets or option sets:
                                      options side by side (differences highlighted) and the
                                      estimated time and memory per layer; serves (like
                                      serve) unless -o writes a static site

environment:
  ACCEL_DASHBOARD_NO_PTXAS=1  do not run ptxas -v on nvgpu kernels (registers unknown)
"""


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one `accel-dashboard: error: ...` line, exit 1."""

    def error(self, message: str) -> NoReturn:
        raise AccelError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=version_text(PROG))
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def net(q: argparse.ArgumentParser) -> None:
        q.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N",
                       help=f"TCP port (default {DEFAULT_PORT}; 0: any free port)")
        q.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                       help="address to listen on (default 127.0.0.1: this machine only)")
        q.add_argument("-v", "--verbose", action="store_true", help="log every request")

    serve = sub.add_parser("serve", help="serve one folder's pages",
                           description="Serve DIR's dashboard until Ctrl-C.")
    serve.add_argument("dir", metavar="DIR", help="accel output folder")
    net(serve)
    export = sub.add_parser("export", help="write one folder's pages as a static site",
                            description="Write DIR's dashboard as static files into SITE.")
    export.add_argument("dir", metavar="DIR", help="accel output folder")
    export.add_argument("-o", "--output", metavar="SITE", required=True,
                        help="folder to write (new, empty, or an earlier export)")
    compare = sub.add_parser("compare", help="compare folders side by side",
                             description="Compare one model built for several targets or "
                                         "option sets, layer by layer.")
    compare.add_argument("dirs", metavar="DIR", nargs="+", help="accel output folders")
    compare.add_argument("-o", "--output", metavar="SITE",
                         help="write a static site instead of serving")
    net(compare)
    return p


def _collect(dirs: list[str]) -> list[tuple[str, object, dict]]:
    from accel.dashboard.collect import build
    from accel.dashboard.folder import detect

    found = []
    for i, d in enumerate(dirs):
        folder = detect(d)
        found.append((f"f{i}", folder, build(folder)))
    return found


def _check_port(port: int) -> None:
    if not 0 <= port <= 65535:
        raise AccelError(f"--port must be 0-65535, got {port}")


def main(argv: list[str]) -> int:
    a = build_parser().parse_args(argv)
    if a.command is None:
        raise AccelError("give a command: serve DIR, export DIR -o SITE or compare DIR... "
                         f"(see {PROG} --help)")
    if a.command in ("serve", "compare") and not getattr(a, "output", None):
        _check_port(a.port)
    dirs = [a.dir] if a.command in ("serve", "export") else a.dirs
    if a.command == "compare" and len(dirs) < 2:
        raise AccelError("compare needs at least two folders")
    folders = _collect(dirs)
    comparison = None
    if a.command == "compare":
        from accel.dashboard.compare import compare

        comparison = compare([m for _, _, m in folders], [fid for fid, _, _ in folders])
    if getattr(a, "output", None):
        from accel.dashboard.site import export

        count = export(folders, comparison, Path(a.output))
        index = Path(a.output).resolve() / "index.html"
        print(f"{PROG}: wrote {count} files to {a.output}: open {index.as_uri()}",
              file=sys.stderr)
        return 0
    return _serve(folders, comparison, a.host, a.port, a.verbose, dirs)


def _serve(folders: list, comparison: dict | None, host: str, port: int, verbose: bool,
           dirs: list[str]) -> int:
    from accel.dashboard.server import LOOPBACK, Dashboard, make_server

    server = make_server(Dashboard(folders, comparison), host, port, verbose)
    bound = server.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    if not (host in LOOPBACK or host.startswith("127.")):
        print(f"{PROG}: warning: listening on {host}: anyone who can reach it can read "
              f"{', '.join(dirs)}", file=sys.stderr)
    print(f"{PROG}: serving {', '.join(dirs)} at http://{shown}:{bound}/ (Ctrl-C stops)",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print(f"{PROG}: stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0


def run() -> None:
    """Console-script entry point."""
    exit_with(main)


if __name__ == "__main__":
    sys.argv[0] = PROG
    run()
