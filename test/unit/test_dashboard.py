"""accel-dashboard without a browser: the models it collects from real output folders, the
comparison, the CLI's errors and the server's refusal of paths outside the folder.
The pages themselves are tested in Chromium: test_dashboard_browser.py."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
from pathlib import Path

import pytest
from accel.dashboard import collect
from accel.dashboard.compare import compare
from conftest import run_tool
from dashboard_samples import EVIL, build_samples

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory):
    return build_samples(tmp_path_factory.getbasetemp() / "dashboard-samples")


@pytest.fixture(scope="module")
def models(samples):
    return {name: collect(samples[name]) for name in
            ("cpu", "rdu", "rdu_train", "nvgpu", "mncore", "reports")}


def test_accel_compile_prints_the_dashboard_command(samples):
    assert f"accel-dashboard serve {samples['cpu']}" in samples["log"]


def test_cpu_model(models):
    m = models["cpu"]
    assert (m["kind"], m["target"]) == ("accel-compile", "cpu")
    assert m["summary"]["measured_ms"] is not None  # --num-iters 2
    assert [p["name"] for p in m["phases"]][:3] == ["get_model()", "export", "torch-backend"]
    assert all(p["ir"] is None or p["ir"].startswith("ir/") for p in m["phases"])
    sources = {r["name"]: r["source"] for r in m["options"]}
    assert sources["opt_level"] == "preset o1" and sources["num_iters"] == "given"
    names = [op[0] for op in m["graph"]["ops"]]
    assert names.count("linalg.matmul") == 5 and names[-1] == "func.return"
    assert any(f["name"] == "main" for f in m["target_page"]["functions"])
    assert m["timeline"]["traces"][-1]["lanes"][0]["name"] == "compile"


def test_rdu_model(models):
    p = models["rdu"]["target_page"]
    assert [s["name"] for s in p["sections"]][:2] == ["s0_linear", "s1_linear"]
    assert [h["name"] for h in p["hypersections"]] == ["blocks"]
    assert [c["chip"] for c in p["chips"]] == [0, 1]
    groups = {op[7] for op in models["rdu"]["graph"]["ops"]}
    assert {"s0_linear", "s1_linear"} <= groups
    lanes = [lane["name"] for lane in models["rdu"]["timeline"]["traces"][0]["lanes"]]
    assert lanes == ["chip 0", "chip 1"]


def test_rdu_train_model(models):
    m = models["rdu_train"]
    assert m["summary"]["training"]
    p = m["target_page"]
    assert [ph["phase"] for ph in p["phases"]] == ["forward", "backward", "optimizer"]
    assert p["limits"]["backward"]["pcu"] < p["limits"]["forward"]["pcu"]  # factor 0.8
    assert {s["label"] for s in m["graph"]["sources"]} == {"forward", "backward", "optimizer"}


def test_mncore_model(models):
    m = models["mncore"]
    assert (m["kind"], m["target"]) == ("codegen_dir", "mncore")
    p = m["target_page"]
    assert p["layers"][0]["name"] and p["sram_limit"] > 0 and p["tensors"]
    assert {r["scheduler"] for r in p["schedulers"]["rows"]} >= {"always_from_dram",
                                                                 "reuse_consecutive"}
    assert {op[7] for op in m["graph"]["ops"]} >= {"Gemm_0", "Transpose_0"}
    profile = next(t for t in m["timeline"]["traces"] if t["file"] == "profile.json")
    assert [lane["name"] for lane in profile["lanes"]] == ["mncore (model): layers",
                                                           "mncore (model): DMA"]


def test_nvgpu_model(models):
    p = models["nvgpu"]["target_page"]
    assert p["arch"] == "sm_80" and p["kernels"]
    assert all(k["launches"] >= 1 for k in p["kernels"])
    if "ptxas -v" in p["ptxas_note"]:
        assert all(isinstance(k["registers"], int) for k in p["kernels"])
    kernels = {op[7] for op in models["nvgpu"]["graph"]["ops"] if op[0] == "gpu.launch_func"}
    assert kernels == {k["name"] for k in p["kernels"]}


def test_compare_aligns_layers_across_targets(models):
    c = compare([models["rdu"], models["mncore"], models["cpu"]], ["f0", "f1", "f2"])
    assert [r["label"] for r in c["rows"]] == ["inp", "<img_src_x_onerror_alert(1)>",
                                               "blocks.0.fc, relu", "blocks.1.fc, relu_1",
                                               "out"]
    for row in c["rows"]:
        assert row["cells"][0]["us"] > 0 and row["cells"][1]["us"] > 0
        assert row["cells"][2] is None  # cpu: no per-layer estimate
    mncore_total = sum(r["cells"][1]["us"] for r in c["rows"])
    assert mncore_total == pytest.approx(models["mncore"]["summary"]["estimated_us"])
    target = next(o for o in c["options"] if o["name"] == "target")
    assert target["differs"] and target["values"] == ["rdu", "mncore", "cpu"]


# -- CLI ------------------------------------------------------------------------------------
def _one_line_error(proc) -> str:
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("accel-dashboard: error: "), proc.stderr
    return lines[0]


def test_help_documents_everything():
    out = run_tool("accel-dashboard", "--help").stdout
    for word in ("serve DIR", "export DIR -o SITE", "compare DIR1", "--port", "--host",
                 "127.0.0.1", "Perfetto", "ACCEL_DASHBOARD_NO_PTXAS"):
        assert word in out
    assert "--host ADDR" in run_tool("accel-dashboard", "serve", "--help").stdout


def test_cli_errors(tmp_path, samples):
    assert "does not exist" in _one_line_error(run_tool("accel-dashboard", "serve",
                                                        str(tmp_path / "nope")))
    (tmp_path / "empty").mkdir()
    assert "not an accel output folder" in _one_line_error(
        run_tool("accel-dashboard", "export", str(tmp_path / "empty"), "-o", str(tmp_path / "s")))
    assert "give a command" in _one_line_error(run_tool("accel-dashboard"))
    assert "-o" in _one_line_error(run_tool("accel-dashboard", "export", str(samples["rdu"])))
    assert "--port must be" in _one_line_error(
        run_tool("accel-dashboard", "serve", str(samples["rdu"]), "--port", "70000"))
    assert "at least two" in _one_line_error(run_tool("accel-dashboard", "compare",
                                                      str(samples["rdu"])))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    assert "not empty" in _one_line_error(run_tool(
        "accel-dashboard", "export", str(samples["reports"]), "-o", str(tmp_path / "busy")))
    assert "must not be written into" in _one_line_error(run_tool(
        "accel-dashboard", "export", str(samples["reports"]), "-o",
        str(samples["reports"] / "site")))


def test_port_in_use(samples):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _one_line_error(run_tool("accel-dashboard", "serve", str(samples["reports"]),
                                        "--port", str(port)))
    assert f"port {port} on 127.0.0.1 is in use" in line


# -- server ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(samples, tmp_path_factory):
    """The reports folder served on a free port, with links that lead out of it."""
    from accel.dashboard.collect import build
    from accel.dashboard.folder import detect
    from accel.dashboard.server import Dashboard, make_server

    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("SECRET")
    root = samples["reports"]
    for name, target in (("link_file", outside / "secret.txt"), ("link_dir", outside)):
        if not (root / name).is_symlink():
            os.symlink(target, root / name)
    folder = detect(root)
    server = make_server(Dashboard([("f0", folder, build(folder))], None), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], root, outside
    server.shutdown()
    server.server_close()


def _get(port: int, path: str, host: str | None = None, method: str = "GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path, skip_host=host is not None)
    if host is not None:
        conn.putheader("Host", host)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), body


@pytest.mark.parametrize("path", [
    "/raw/f0/../../secret.txt", "/raw/f0/%2e%2e/%2e%2e/secret.txt",
    "/raw/f0/%2e%2e%2f%2e%2e%2fsecret.txt", "/raw/f0/..%2f..%2fsecret.txt",
    "/raw/f0//etc/passwd", "/raw/f0/%2fetc%2fpasswd", "/raw/f0/link_file",
    "/raw/f0/link_dir/secret.txt", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
    "/app/../../../../etc/passwd", "/app/%2e%2e/static/index.html", "/raw/f0/%00",
    "/raw/f0/..\\..\\secret.txt", "/data/f0/files/999.js", "/data/f0/files/-1.js",
    "/raw/f1/sections.json", "/raw/f0/", "/raw/f0/.",
])
def test_server_refuses_paths_outside_the_folder(served, path):
    port, _, _ = served
    status, _, body = _get(port, path)
    assert status == 404 and b"SECRET" not in body and b"root:" not in body


def test_server_serves_the_app_and_the_folder(served):
    port, root, _ = served
    status, headers, body = _get(port, "/")
    assert status == 200 and b"accel dashboard" in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    status, headers, body = _get(port, "/raw/f0/sections.json")
    assert status == 200 and json.loads(body)["arch"] == "sn40l"
    assert headers["Content-Security-Policy"].startswith("sandbox")
    assert headers["X-Content-Type-Options"] == "nosniff"
    quoted = "/raw/f0/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E.mlir"
    status, headers, body = _get(port, quoted)
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert _get(port, "/app/vendor/d3.min.js")[0] == 200
    assert _get(port, "/app/vendor/d3-LICENSE.txt")[0] == 200
    status, _, body = _get(port, "/data/f0/model.js")
    assert status == 200 and EVIL.encode() not in body and b"\\u003cimg" in body
    assert _get(port, "/", method="HEAD")[0] == 200
    assert _get(port, "/", method="POST")[0] == 501


def test_server_checks_the_host_header(served):
    port, _, _ = served
    assert _get(port, "/", host="evil.example:80")[0] == 403
    assert _get(port, "/", host=f"localhost:{port}")[0] == 200


def test_export_writes_a_static_site(samples, tmp_path):
    proc = run_tool("accel-dashboard", "export", str(samples["rdu"]), "-o", str(tmp_path / "s"))
    assert proc.returncode == 0, proc.stderr
    site = tmp_path / "s"
    assert (site / "index.html").is_file() and (site / "app/vendor/d3.min.js").is_file()
    assert (site / "raw/f0/sections.json").is_file()
    assert not any(p.suffix == ".npy" and p.stat().st_size > 4 << 20 for p in site.rglob("*"))
    # a second export into the same site replaces it
    assert run_tool("accel-dashboard", "export", str(samples["rdu"]), "-o",
                    str(site)).returncode == 0
    assert Path(site / "data/index.js").read_text().startswith("window.ACCEL_INDEX=")
