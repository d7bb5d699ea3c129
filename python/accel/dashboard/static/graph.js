// Graph: every op of the model's IR, searchable, as a virtual list (fast on 10k+ ops);
// clicking an op shows its section/layer/kernel, producers and users, and its IR lines.
"use strict";
(function (AD) {
  const h = AD.h;
  const NAME = 0, RES = 1, PREDS = 2, TYPE = 3, SRC = 4, LINE = 5, END = 6, GROUP = 7,
    LOC = 8, FUNC = 9;

  function users(g) {
    if (g._users) return g._users;
    const out = g.ops.map(function () { return []; });
    g.ops.forEach(function (op, i) { for (const p of op[PREDS]) out[p].push(i); });
    g._users = out;
    return out;
  }

  AD.pages.graph = function (main, m, fid, params) {
    const g = m.graph;
    main.appendChild(h("h1", {}, "Graph"));
    if (!g) {
      main.appendChild(h("p", {class: "note"}, "No IR in this folder to read ops from."));
      return;
    }
    const kind = g.group_kind || "group";
    main.appendChild(h("p", {class: "hint"}, g.ops.length + " ops from ",
      g.sources.map(function (s, i) {
        return [i ? ", " : "", h("a", {href: AD.link(fid, "file", {path: s.file})}, s.file)];
      }), g.truncated ? " (truncated)" : "",
      ". Search by op, value, type, " + kind + " or location; click an op."));
    const search = h("input", {type: "search", id: "graph-search", placeholder: "search ops…",
      value: params.get("q") || ""});
    const count = h("span", {class: "count"});
    main.appendChild(h("div", {class: "toolbar"}, search, count));
    const keys = g.ops.map(function (op) {
      return (op[NAME] + " " + op[RES] + " " + op[TYPE] + " " + op[GROUP] + " " + op[LOC] +
        " " + op[FUNC]).toLowerCase();
    });
    let shown = g.ops.map(function (_, i) { return i; });
    let selected = params.has("op") ? +params.get("op") : -1;
    const detail = h("div", {class: "detail", id: "op-detail"});
    const list = AD.virtualList(0, 22, function (row) {
      const i = shown[row];
      const op = g.ops[i];
      return h("div", {class: "oprow" + (i === selected ? " sel" : ""), "data-op": i,
        onclick: function () { select(i); }},
      h("span", {class: "c-i"}, String(i)),
      h("span", {class: "c-name"}, op[NAME]),
      h("span", {class: "c-res"}, op[RES]),
      h("span", {class: "c-type"}, op[TYPE]),
      h("span", {class: "c-group"}, op[GROUP]),
      h("span", {class: "c-func"}, op[FUNC]));
    }, 520);
    list.id = "graph-list";
    main.appendChild(h("div", {class: "graph"}, h("div", {class: "left"},
      h("div", {class: "ophead"}, h("span", {class: "c-i"}, "#"),
        h("span", {class: "c-name"}, "op"), h("span", {class: "c-res"}, "results"),
        h("span", {class: "c-type"}, "type"), h("span", {class: "c-group"}, kind),
        h("span", {class: "c-func"}, "function")), list), detail));

    function filter() {
      const q = search.value.trim().toLowerCase();
      shown = [];
      for (let i = 0; i < keys.length; i++) if (!q || keys[i].includes(q)) shown.push(i);
      count.textContent = shown.length + " of " + g.ops.length + " ops";
      list.redraw(shown.length);
    }
    let timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(filter, 80);
    });
    filter();

    async function select(i) {
      selected = i;
      list.redraw();
      const op = g.ops[i];
      detail.textContent = "";
      const src = g.sources[op[SRC]];
      const u = users(g)[i];
      const opLink = function (j) {
        return h("a", {href: "#", class: "oplink", onclick: function (e) {
          e.preventDefault();
          select(j);
          const row = shown.indexOf(j);
          if (row >= 0) list.scrollToRow(row);
        }}, "#" + j + " " + g.ops[j][NAME] + " " + g.ops[j][RES]);
      };
      detail.appendChild(h("h2", {}, "#" + i + " " + op[NAME]));
      const rows = [["results", op[RES] || "–"], ["type", op[TYPE] || "–"],
        ["function", op[FUNC]], ["location", op[LOC] || "–"]];
      if (op[GROUP]) {
        rows.unshift([kind, h("a", {href: AD.link(fid, "target", {hl: op[GROUP]}),
          class: "grouplink"}, op[GROUP])]);
      }
      detail.appendChild(h("table", {class: "kv"}, rows.map(function (r) {
        return h("tr", {}, h("th", {}, r[0]), h("td", {}, r[1]));
      })));
      detail.appendChild(neighbours(g, i, u, select));
      detail.appendChild(h("h3", {}, "inputs from"));
      detail.appendChild(h("ul", {}, op[PREDS].map(function (j) { return h("li", {}, opLink(j)); })));
      detail.appendChild(h("h3", {}, "used by"));
      detail.appendChild(h("ul", {}, u.slice(0, 50).map(function (j) {
        return h("li", {}, opLink(j));
      })));
      detail.appendChild(h("h3", {}, "IR ", h("a", {href: AD.link(fid, "file",
        {path: src.file, line: op[LINE], end: op[END]})}, src.file + ":" + op[LINE])));
      const file = AD.fileByPath(m, src.file);
      if (file) {
        const text = await AD.fileText(fid, file);
        if (selected !== i) return;
        const lines = text.split("\n").slice(op[LINE] - 1, Math.min(op[END], op[LINE] + 60));
        detail.appendChild(h("pre", {class: "ir", id: "op-ir"}, lines.join("\n")));
      }
    }
    if (selected >= 0 && selected < g.ops.length) {
      select(selected);
      window.requestAnimationFrame(function () { list.scrollToRow(shown.indexOf(selected)); });
    }
  };

  // The op with its producers (left) and users (right), as a small SVG.
  function neighbours(g, i, u, select) {
    const preds = g.ops[i][PREDS].slice(0, 8), next = u.slice(0, 8);
    const rows = Math.max(preds.length, next.length, 1);
    const W = 460, RH = 26, H = rows * RH + 10;
    const svg = d3.create("svg").attr("class", "nbr").attr("width", W).attr("height", H);
    const box = function (j, x, y, cls) {
      const gEl = svg.append("g").attr("class", "node " + cls).attr("transform",
        "translate(" + x + "," + y + ")").on("click", function () { select(j); });
      gEl.append("rect").attr("width", 140).attr("height", 20).attr("rx", 4);
      gEl.append("text").attr("x", 6).attr("y", 14).text(("#" + j + " " +
        g.ops[j][NAME].replace(/^\w+\./, "")).slice(0, 20));
      gEl.append("title").text(g.ops[j][NAME] + " " + g.ops[j][RES]);
    };
    const cy = (H - 20) / 2;
    preds.forEach(function (j, k) {
      svg.append("line").attr("x1", 150).attr("y1", 5 + k * RH + 10).attr("x2", 160)
        .attr("y2", cy + 10);
      box(j, 10, 5 + k * RH, "pred");
    });
    next.forEach(function (j, k) {
      svg.append("line").attr("x1", 300).attr("y1", cy + 10).attr("x2", 310)
        .attr("y2", 5 + k * RH + 10);
      box(j, 310, 5 + k * RH, "succ");
    });
    box(i, 160, cy, "self");
    return svg.node();
  }
})(window.AD);
