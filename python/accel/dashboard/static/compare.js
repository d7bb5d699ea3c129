// Compare: several folders of one model side by side: totals, options (differences
// highlighted) and estimated time and memory per aligned layer.
"use strict";
(function (AD) {
  const h = AD.h;

  AD.pages.compare = function (main, c, index) {
    main.appendChild(h("h1", {}, "Compare"));
    main.setAttribute("data-page", "compare");
    const fs = c.folders;
    const head = h("tr", {}, h("th", {}, ""), fs.map(function (f) {
      return h("th", {}, h("a", {href: AD.link(f.id, "summary")}, f.name),
        h("div", {class: "sub"}, f.target + (f.preset ? " · " + f.preset : "")));
    }));
    const line = function (label, get) {
      return h("tr", {}, h("th", {}, label), fs.map(function (f) { return h("td", {class: "num"},
        get(f)); }));
    };
    const best = d3.min(fs, function (f) { return f.estimated_us; });
    main.appendChild(AD.section("Totals", h("div", {class: "tablewrap"},
      h("table", {class: "grid totals"}, h("thead", {}, head), h("tbody", {},
        line("estimated time", function (f) {
          return f.estimated_us === null || f.estimated_us === undefined ? "–" :
            h("span", {class: f.estimated_us === best && fs.length > 1 ? "best" : ""},
              AD.fmtUs(f.estimated_us));
        }),
        line("measured time", function (f) {
          return f.measured_ms === null || f.measured_ms === undefined ? "–" :
            f.measured_ms + " ms";
        }),
        line("compile time", function (f) {
          return f.compile_s === null || f.compile_s === undefined ? "–" :
            AD.fmtNum(f.compile_s) + " s";
        }),
        line("flops", function (f) { return AD.fmtNum(f.flops); }),
        line("units", function (f) { return AD.fmtNum(f.units); }))))));

    const differing = c.options.filter(function (o) { return o.differs; }).length;
    const optHead = h("tr", {}, h("th", {}, "option"), fs.map(function (f) {
      return h("th", {}, f.name);
    }));
    const optRows = c.options.map(function (o) {
      return h("tr", {class: o.differs ? "differs" : "same", "data-name": o.name},
        h("th", {}, o.name), o.values.map(function (v, i) {
          return h("td", {class: o.odd[i] ? "odd" : ""}, o.present[i] ? AD.show(v) : "–");
        }));
    });
    const onlyDiff = h("input", {type: "checkbox", id: "only-diff", checked: true});
    const optTable = h("table", {class: "grid options only"}, h("thead", {}, optHead),
      h("tbody", {}, optRows));
    onlyDiff.addEventListener("change", function () {
      optTable.classList.toggle("only", onlyDiff.checked);
    });
    main.appendChild(AD.section("Options (" + differing + " differ)",
      h("label", {}, onlyDiff, " only the options that differ"),
      h("div", {class: "tablewrap"}, optTable)));

    const shown = fs.filter(function (f, i) {
      return c.rows.some(function (r) { return r.cells[i]; });
    });
    if (!c.rows.length) {
      main.appendChild(AD.section("Per layer", h("p", {class: "note"}, "No folder has per-" +
        "layer estimates (rdu sections or mncore layers); cpu and nvgpu folders show totals.")));
      return;
    }
    const idx = shown.map(function (f) { return fs.indexOf(f); });
    const layerHead = h("tr", {}, h("th", {}, "#"), h("th", {}, "layer (ops)"),
      shown.map(function (f) {
        return h("th", {colspan: 3}, f.name, h("div", {class: "sub"}, "units · time · " +
          (f.mem_unit || "memory")));
      }));
    const maxUs = d3.max(c.rows, function (r) {
      return d3.max(idx, function (i) { return r.cells[i] ? r.cells[i].us : 0; });
    }) || 1;
    const body = c.rows.map(function (r, k) {
      const times = idx.map(function (i) { return r.cells[i] ? r.cells[i].us : null; });
      const fastest = d3.min(times.filter(function (t) { return t !== null; }));
      return h("tr", {"data-name": r.label}, h("td", {class: "num"}, String(k)),
        h("td", {class: "lbl"}, r.label, h("div", {class: "sub"}, r.kinds.join(", "))),
        idx.map(function (i, j) {
          const cell = r.cells[i];
          if (!cell) return [h("td", {}, "–"), h("td", {}), h("td", {})];
          return [
            h("td", {class: "units"}, cell.units.join(", ")),
            h("td", {class: "num" + (cell.us === fastest && idx.length > 1 ? " best" : "")},
              AD.fmtUs(cell.us), h("div", {class: "bar"}, h("div", {style: {width:
                (100 * cell.us / maxUs) + "%"}}))),
            h("td", {class: "num"}, AD.fmtNum(cell.mem)),
          ];
        }));
    });
    main.appendChild(AD.section("Per layer", h("p", {class: "hint"}, "Rows are the smallest " +
      "ranges of the model's ops that no folder's section or layer crosses (aligned on the " +
      "linalg ops every target starts from); the fastest time in a row is marked."),
    h("div", {class: "tablewrap"}, h("table", {class: "grid perlayer"},
      h("thead", {}, layerHead), h("tbody", {}, body)))));
  };
})(window.AD);
