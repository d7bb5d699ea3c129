"""accel-dashboard: every accel output folder as pages in a browser (docs/dashboard.md).

    accel-dashboard serve out/gpt2            # http://127.0.0.1:8327
    accel-dashboard export out/gpt2 -o site   # static pages: open site/index.html
    accel-dashboard compare out/a out/b       # one model, several targets or option sets

`collect` reads a folder into one JSON model (`collect.py` and one `*_page.py` per
target), `site` writes the static site (the vanilla-JS app in static/ with d3 vendored),
`server` serves the same app from the standard library's HTTP server, `compare` aligns the
units of several folders layer by layer.
"""

from accel.dashboard.collect import collect

__all__ = ["collect"]
