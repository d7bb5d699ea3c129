"""accel-dashboard's pages in a real browser: headless Chromium opens the exported site
(file://) and the served one (http://127.0.0.1), page by page and target by target,
checks the DOM, that no console error or exception happened and that names holding HTML
show as text (an `alert` would count), and saves a screenshot of each page under the
test's tmp_path (and into $ACCEL_DASHBOARD_SHOTS, which docs/images is made from).

Skipped, saying so, where Chromium or websocket-client is missing (`apt-get install
chromium`; .ci/run installs it)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from browser import Chromium, find_chromium
from dashboard_samples import EVIL, build_samples

pytestmark = pytest.mark.slow
NO_ALERT = "window.__xss = 0; window.alert = function () { window.__xss++; };"
FOLDERS = ("cpu", "rdu", "rdu_train", "nvgpu", "mncore", "reports")


def _missing() -> str | None:
    if find_chromium() is None:
        return "chromium is not installed (apt-get install chromium; .ci/run does it)"
    try:
        import websocket  # noqa: F401
    except ImportError:
        return "websocket-client is not installed (pip install -e '.[test]')"
    return None


if _missing():
    pytest.skip(_missing(), allow_module_level=True)


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """One site holding every sample folder (f0..f5) and the comparison: exported to disk
    and served; yields {"file": base URL, "http": base URL}."""
    from accel.dashboard.collect import build
    from accel.dashboard.compare import compare
    from accel.dashboard.folder import detect
    from accel.dashboard.server import Dashboard, make_server
    from accel.dashboard.site import export

    samples = build_samples(tmp_path_factory.getbasetemp() / "dashboard-samples")
    folders = []
    for i, name in enumerate(FOLDERS):
        folder = detect(samples[name])
        folders.append((f"f{i}", folder, build(folder)))
    comparison = compare([m for _, _, m in folders[:5]], [f for f, _, _ in folders[:5]])
    out = tmp_path_factory.mktemp("site")
    export(folders, comparison, out)
    server = make_server(Dashboard(folders, comparison), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"file": (out / "index.html").as_uri(),
           "http": f"http://127.0.0.1:{server.server_address[1]}/"}
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with Chromium.launch(tmp_path_factory.mktemp("chromium")) as b:
        yield b


@pytest.fixture(scope="module", params=["file", "http"])
def tab(request, sites, browser):
    """One tab per mode; pages are reached by changing the hash (one load)."""
    page = browser.open(sites[request.param] + "#/f0/summary", init_script=NO_ALERT)
    page.wait("document.getElementById('main').dataset.ready === '1'")
    page.mode = request.param
    return page


def show(tab, route: str, tmp_path: Path, name: str) -> str:
    """Go to `route`, wait until it rendered, check for errors and alerts, screenshot;
    the main element's text."""
    tab.errors.clear()
    start = time.monotonic()
    tab.eval(f"location.hash = {route!r}")
    tab.wait(f"document.getElementById('main').dataset.route === {route!r} && "
             "document.getElementById('main').dataset.ready === '1'")
    elapsed = time.monotonic() - start
    tab.pump(0.1)
    assert tab.errors == [], tab.errors
    assert tab.eval("window.__xss") == 0
    assert tab.eval("document.querySelectorAll('main img, main script').length") == 0
    assert not tab.eval("!!document.querySelector('main .error')"), tab.eval(
        "document.querySelector('main .error').textContent")
    tab.screenshot(tmp_path / f"{tab.mode}-{name}.png")
    shots = os.environ.get("ACCEL_DASHBOARD_SHOTS")
    if shots and tab.mode == "http":
        tab.screenshot(Path(shots) / f"dashboard-{name}.png")
    assert elapsed < 5, f"{route} took {elapsed:.1f} s"
    return tab.eval("document.getElementById('main').innerText")


@pytest.mark.parametrize("fid,name", list(enumerate(FOLDERS)))
def test_summary_phases_files(tab, tmp_path, fid, name):
    text = show(tab, f"#/f{fid}/summary", tmp_path, f"{name}-summary")
    assert name.replace("_", "_") in text
    if name != "reports":
        assert "Options" in text
        text = show(tab, f"#/f{fid}/phases", tmp_path, f"{name}-phases")
        rows = tab.eval("document.querySelectorAll('table.phases tbody tr').length")
        assert rows >= 3
    text = show(tab, f"#/f{fid}/files", tmp_path, f"{name}-files")
    if name == "reports":
        assert f"{EVIL}.mlir" in text


@pytest.mark.parametrize("fid,name,group", [(0, "cpu", None), (1, "rdu", "s0_linear"),
                                            (2, "rdu_train", "s1_linear"),
                                            (3, "nvgpu", "main_kernel"), (4, "mncore",
                                                                          "Gemm_0")])
def test_graph(tab, tmp_path, fid, name, group):
    text = show(tab, f"#/f{fid}/graph", tmp_path, f"{name}-graph")
    assert "ops from" in text
    total = tab.eval("document.querySelectorAll('#graph-list .oprow').length")
    assert total > 5
    query = "linalg.matmul" if name != "nvgpu" else "gpu.launch_func"
    tab.eval(f"(() => {{ const s = document.getElementById('graph-search'); "
             f"s.value = {query!r}; s.dispatchEvent(new Event('input')); }})()")
    tab.wait("[...document.querySelectorAll('#graph-list .oprow .c-name')].every("
             f"e => e.textContent === {query!r})")
    tab.eval("document.querySelector('#graph-list .oprow').click()")
    tab.wait("!!document.getElementById('op-ir')")
    assert query in tab.eval("document.getElementById('op-ir').textContent")
    if group:
        assert group in tab.eval("document.getElementById('op-detail').innerText")
    tab.screenshot(tmp_path / f"{tab.mode}-{name}-graph-op.png")
    shots = os.environ.get("ACCEL_DASHBOARD_SHOTS")
    if shots and tab.mode == "http":
        tab.screenshot(Path(shots) / f"dashboard-{name}-graph.png")
    assert tab.errors == []


def test_target_rdu(tab, tmp_path):
    text = show(tab, "#/f1/target?hl=s1_linear", tmp_path, "rdu-target")
    assert "s0_linear" in text and "blocks" in text and "chip" in text
    assert tab.eval("document.querySelectorAll('#rdu-chart svg rect.bar-PCU').length") == 7
    assert tab.eval("document.querySelector('tr.hl').dataset.name") == "s1_linear"
    tab.eval("document.querySelector('section button').click()")  # scale to the limits
    tab.wait("document.querySelectorAll('#rdu-chart line.limit').length >= 1")
    text = show(tab, "#/f2/target", tmp_path, "rdu-train-target")
    for phase in ("forward", "backward", "optimizer"):
        assert phase in text
    assert "832" in text  # backward's limit: 1040 x 0.8


def test_target_mncore(tab, tmp_path):
    text = show(tab, "#/f4/target", tmp_path, "mncore-target")
    for word in ("Gemm_0", "Transpose_0", "ALL", "always_from_dram", "reuse_consecutive"):
        assert word in text
    assert tab.eval("document.querySelectorAll('svg.sram path.step').length") == 1
    assert tab.eval("document.querySelectorAll('table.layers tbody tr').length") >= 10


def test_target_nvgpu_and_cpu(tab, tmp_path):
    text = show(tab, "#/f3/target", tmp_path, "nvgpu-target")
    assert "sm_80" in text and "main_kernel" in text
    kernels = tab.eval("document.querySelectorAll('table.kernels tbody tr').length")
    assert kernels >= 10
    text = show(tab, "#/f0/target", tmp_path, "cpu-target")
    assert "main" in text and "vector ISA" in text


@pytest.mark.parametrize("fid,lanes", [(1, ["chip 0", "chip 1", "compile"]),
                                       (4, ["mncore (model): layers", "mncore (model): DMA",
                                            "compile"]),
                                       (5, [EVIL, "chip 0"])])
def test_timeline(tab, tmp_path, fid, lanes):
    show(tab, f"#/f{fid}/timeline", tmp_path, f"timeline-f{fid}")
    labels = tab.eval("[...document.querySelectorAll('.lane-label')].map(e => e.textContent)")
    labels = list(dict.fromkeys(labels))
    assert [name for name in labels if name in lanes] == lanes  # other trace files may add lanes
    assert tab.eval("document.querySelectorAll('canvas.tl').length") >= 1
    tab.eval("document.querySelector('canvas.tl').dispatchEvent(new WheelEvent('wheel', "
             "{deltaY: -300, clientX: 400, clientY: 300, bubbles: true}))")
    tab.pump(0.2)
    assert tab.errors == []


def test_escaping(tab, tmp_path):
    text = show(tab, "#/f5/target", tmp_path, "reports-target")
    assert f"s0_{EVIL}" in text and f"linear:{EVIL}" in text
    show(tab, "#/f2/file?path=train.json", tmp_path, "train-json")
    tab.wait("document.querySelector('.codebox') && "
             "document.querySelector('.codebox').innerText.includes('onerror')")
    assert EVIL in tab.eval("document.querySelector('.codebox').innerText")
    assert tab.eval("window.__xss") == 0
    assert tab.eval("document.querySelectorAll('img').length") == 0


def test_compare(tab, tmp_path):
    text = show(tab, "#/compare", tmp_path, "compare")
    assert "Per layer" in text and "blocks.0.fc" in text
    assert tab.eval("document.querySelectorAll('table.perlayer tbody tr').length") == 5
    assert tab.eval("document.querySelectorAll('table.options tr.differs').length") >= 3
