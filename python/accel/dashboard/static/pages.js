// Summary, Phases, Files and the file viewer.
"use strict";
(function (AD) {
  const h = AD.h;

  AD.pages.summary = function (main, m, fid) {
    const s = m.summary;
    main.appendChild(h("h1", {}, m.name, h("span", {class: "badge"}, m.target),
      h("span", {class: "badge light"}, m.kind)));
    main.appendChild(h("p", {class: "path"}, m.path));
    main.appendChild(AD.cards([
      ["target", m.target], ["preset", s.preset], ["entry", s.entry && "@" + s.entry],
      ["mode", s.training ? "training (train step)" : "inference"],
      ["estimated time", s.estimated_us !== null && s.estimated_us !== undefined ?
        AD.fmtUs(s.estimated_us) : null],
      ["measured time", s.measured_ms !== null && s.measured_ms !== undefined ?
        s.measured_ms + " ms" : null],
      ["compile time", s.compile_s !== null && s.compile_s !== undefined ?
        AD.fmtNum(s.compile_s) + " s" : null],
      ["flops", s.flops ? AD.fmtNum(s.flops) : null],
      ["graph ops", m.graph ? AD.fmtNum(m.graph.ops.length) : null],
      ["cache hit", s.cache_hit === undefined || s.cache_hit === null ? null :
        s.cache_hit ? "yes" : "no"],
    ].filter(function (c) { return c[1] !== null && c[1] !== undefined; })));
    if (s.command) main.appendChild(AD.section("Command", h("pre", {class: "cmd"}, s.command)));
    if (s.measured) main.appendChild(h("p", {}, s.measured));
    for (const note of m.notes) main.appendChild(h("p", {class: "note"}, note));
    for (const w of s.warnings || []) main.appendChild(h("p", {class: "warn"}, "warning: " + w));
    main.appendChild(AD.section("Options",
      h("p", {class: "hint"}, "source: given (a flag of the command), option.json, preset, " +
        "default, or set by the tool/target"),
      AD.table([
        {key: "name", label: "option", fmt: function (v, r) {
          return h("span", {title: r.doc}, v);
        }},
        {key: "value", label: "value"},
        {key: "source", label: "source", fmt: function (v) {
          return h("span", {class: "src src-" + v.split(" ")[0]}, v);
        }},
        {key: "default", label: "default"},
      ], m.options, {rowClass: function (r) { return r.source === "given" ? "given" : ""; }})));
    if (s.hardware && s.hardware.length) {
      main.appendChild(AD.section("Hardware model", AD.table([
        {key: "quantity", label: "quantity"},
        {key: "value", label: "value", num: true},
        {key: "source", label: "source"},
      ], s.hardware)));
    }
    const versions = Object.entries(s.versions || {}).filter(function (e) {
      return e[0] !== "features";
    });
    if (versions.length || s.host) {
      main.appendChild(AD.section("Versions", AD.table([
        {key: 0, label: "what"}, {key: 1, label: "version"},
      ], versions.concat(s.host ? [["host", s.host]] : []))));
    }
  };

  AD.pages.phases = function (main, m, fid) {
    main.appendChild(h("h1", {}, "Phases"));
    if (!m.phases.length) {
      main.appendChild(h("p", {class: "note"}, "No phase times in this folder (no compile.log " +
        "or summary.json)."));
    }
    const max = Math.max(1e-9, ...m.phases.map(function (p) { return p.seconds || 0; }));
    main.appendChild(AD.table([
      {key: "i", label: "#", num: true},
      {key: "name", label: "phase"},
      {key: "ok", label: "status", fmt: function (v) {
        return h("span", {class: v ? "ok" : "fail"}, v ? "ok" : "failed");
      }},
      {key: "seconds", label: "seconds", num: true},
      {key: "seconds", label: "", fmt: function (v) {
        return h("div", {class: "bar"}, h("div", {style: {width: (100 * (v || 0) / max) + "%"}}));
      }},
      {key: "ir", label: "IR after it", fmt: function (v) {
        return v ? h("a", {href: AD.link(fid, "file", {path: v})}, v) : "";
      }},
      {key: "log", label: "log", fmt: function (v) {
        return v ? h("a", {href: AD.link(fid, "file", {path: v})}, v) : "";
      }},
    ], m.phases.map(function (p, i) { return Object.assign({i: i + 1}, p); }),
    {cls: "phases"}));
    const shown = new Set(m.phases.map(function (p) { return p.ir; }));
    const other = m.files.filter(function (f) {
      return f.path.startsWith("ir/") && !shown.has(f.path);
    });
    if (other.length) {
      main.appendChild(AD.section("Other IR files", h("ul", {}, other.map(function (f) {
        return h("li", {}, h("a", {href: AD.link(fid, "file", {path: f.path})}, f.path));
      }))));
    }
  };

  AD.pages.files = function (main, m, fid) {
    main.appendChild(h("h1", {}, "Files"));
    main.appendChild(AD.table([
      {key: "path", label: "file", fmt: function (v, f) {
        return f.text ? h("a", {href: AD.link(fid, "file", {path: v})}, v) :
          h("a", {href: AD.rawUrl(fid, v), class: "raw"}, v);
      }},
      {key: "bytes", label: "size", num: true, fmt: function (v) { return AD.fmtBytes(v); }},
    ], m.files));
  };

  // One text file, line-numbered, only the visible lines in the DOM; `line`/`end`
  // highlight a range (an op's IR).
  AD.pages.file = async function (main, m, fid, params) {
    const path = params.get("path");
    const file = AD.fileByPath(m, path);
    main.appendChild(h("h1", {}, path || "?"));
    if (!file || !file.text) {
      main.appendChild(h("p", {class: "error"}, "no text file " + path + " in this folder"));
      return;
    }
    main.appendChild(h("p", {}, AD.fmtBytes(file.bytes), " · ",
      h("a", {href: AD.rawUrl(fid, path), target: "_blank", rel: "noopener"}, "raw file")));
    const text = await AD.fileText(fid, file);
    main.appendChild(AD.codeView(text, +params.get("line") || 0,
      +params.get("end") || +params.get("line") || 0, 640));
  };

  AD.codeView = function (text, first, last, height) {
    const lines = text.split("\n");
    const width = String(lines.length).length;
    const list = AD.virtualList(lines.length, 18, function (i) {
      const hl = first && i + 1 >= first && i + 1 <= last;
      return h("div", {class: "code" + (hl ? " hl" : "")},
        h("span", {class: "ln"}, String(i + 1).padStart(width, " ")), lines[i]);
    }, height);
    list.classList.add("codebox");
    if (first) window.requestAnimationFrame(function () { list.scrollToRow(first - 1); });
    return list;
  };
})(window.AD);
