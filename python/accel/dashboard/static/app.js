// accel dashboard: the core (DOM helpers, data loading, routing, tables, virtual lists).
// Every name from a model is put in the page as text (textContent, createTextNode,
// d3's .text()): never as HTML, so op and module names cannot inject markup.
"use strict";
window.AD = (function () {
  const AD = {pages: {}, cache: {}};
  window.ACCEL_DATA = window.ACCEL_DATA || {};

  // -- DOM -------------------------------------------------------------------------------
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "style") for (const [p, x] of Object.entries(v)) el.style.setProperty(p, x);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    append(el, kids);
    return el;
  }
  function append(el, kids) {
    for (const kid of kids.flat(Infinity)) {
      if (kid === undefined || kid === null || kid === false) continue;
      el.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }
  AD.h = h;
  AD.append = append;

  // -- formatting ------------------------------------------------------------------------
  AD.fmtNum = function (v, digits) {
    if (v === null || v === undefined || v === "") return "–";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v)) return v.toLocaleString("en-US");
    return v.toLocaleString("en-US", {maximumFractionDigits: digits === undefined ? 3 : digits});
  };
  AD.fmtUs = function (us) {
    if (us === null || us === undefined) return "–";
    if (us >= 1e6) return (us / 1e6).toFixed(3) + " s";
    if (us >= 1e3) return (us / 1e3).toFixed(3) + " ms";
    return us.toFixed(us < 10 ? 3 : 2) + " µs";
  };
  AD.fmtBytes = function (b) {
    if (b === null || b === undefined) return "–";
    const units = ["B", "KiB", "MiB", "GiB"];
    let i = 0;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : b) + " " + units[i];
  };
  AD.show = function (v) {
    if (v === null || v === undefined) return "none";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  };

  // -- data ------------------------------------------------------------------------------
  // Data travels as scripts (data/<folder>/model.js), which load from file:// too.
  AD.load = function (url, key) {
    if (key in window.ACCEL_DATA) return Promise.resolve(window.ACCEL_DATA[key]);
    if (AD.cache[url]) return AD.cache[url];
    AD.cache[url] = new Promise(function (resolve, reject) {
      const s = document.createElement("script");
      s.src = url;
      s.onload = function () {
        if (key in window.ACCEL_DATA) resolve(window.ACCEL_DATA[key]);
        else reject(new Error("no data in " + url));
      };
      s.onerror = function () { delete AD.cache[url]; reject(new Error("cannot load " + url)); };
      document.head.appendChild(s);
    });
    return AD.cache[url];
  };
  AD.model = function (fid) { return AD.load("data/" + fid + "/model.js", fid + "/model"); };
  AD.fileText = function (fid, file) {
    return AD.load("data/" + fid + "/files/" + file.id + ".js", fid + "/file/" + file.id);
  };
  AD.fileByPath = function (model, path) {
    return model.files.find(function (f) { return f.path === path; });
  };
  AD.rawUrl = function (fid, path) {
    return "raw/" + fid + "/" + path.split("/").map(encodeURIComponent).join("/");
  };

  // -- routing ---------------------------------------------------------------------------
  AD.route = function () {
    const hash = location.hash.replace(/^#\/?/, "");
    const [path, query] = hash.split("?");
    const parts = path.split("/").filter(Boolean);
    const params = new URLSearchParams(query || "");
    return {fid: parts[0] || null, page: parts[1] || "summary", params: params};
  };
  AD.link = function (fid, page, params) {
    const q = params ? "?" + new URLSearchParams(params).toString() : "";
    return "#/" + fid + "/" + page + q;
  };

  function pageList(model) {
    const list = [["summary", "Summary"], ["phases", "Phases"], ["graph", "Graph"]];
    const names = {cpu: "CPU", nvgpu: "NVGPU", rdu: "RDU", mncore: "MN-Core"};
    if (model.target_page) list.push(["target", names[model.target] || "Target"]);
    list.push(["timeline", "Timeline"], ["files", "Files"]);
    return list;
  }

  function nav(fid, model, current) {
    const navEl = document.getElementById("nav");
    navEl.textContent = "";
    if (model) {
      for (const [page, label] of pageList(model)) {
        navEl.appendChild(h("a", {href: AD.link(fid, page), class: page === current ? "on" : "",
          "data-page": page}, label));
      }
    }
    if (window.ACCEL_INDEX.compare) {
      navEl.appendChild(h("a", {href: "#/compare", class: current === "compare" ? "on" : "",
        "data-page": "compare"}, "Compare"));
    }
    const sel = document.getElementById("folder");
    sel.value = current === "compare" ? "compare" : fid || "";
  }

  AD.render = async function () {
    const main = document.getElementById("main");
    main.removeAttribute("data-ready");
    const r = AD.route();
    const index = window.ACCEL_INDEX;
    let fid = r.fid;
    if (!fid) fid = index.compare ? "compare" : index.folders[0].id;
    try {
      if (fid === "compare") {
        nav(null, null, "compare");
        const data = await AD.load("data/compare.js", "compare");
        main.textContent = "";
        AD.pages.compare(main, data, index);
        document.title = "compare · accel dashboard";
        main.setAttribute("data-page", "compare");
        main.setAttribute("data-route", location.hash);
      main.setAttribute("data-ready", "1");
        return;
      }
      const folder = index.folders.find(function (f) { return f.id === fid; });
      if (!folder) throw new Error("no folder " + fid);
      const model = await AD.model(fid);
      nav(fid, model, r.page === "file" ? "files" : r.page);
      main.textContent = "";
      const render = AD.pages[r.page];
      if (!render) throw new Error("no page " + r.page);
      document.title = r.page + " · " + model.name + " · accel dashboard";
      await render(main, model, fid, r.params);
      main.setAttribute("data-page", r.page);
      main.setAttribute("data-route", location.hash);
      main.setAttribute("data-ready", "1");
    } catch (err) {
      main.textContent = "";
      main.appendChild(h("p", {class: "error"}, String(err.message || err)));
      main.setAttribute("data-route", location.hash);
      main.setAttribute("data-ready", "1");
    }
  };

  AD.start = function () {
    const index = window.ACCEL_INDEX;
    const sel = document.getElementById("folder");
    for (const f of index.folders) {
      sel.appendChild(h("option", {value: f.id}, f.name + " (" + f.target + ")"));
    }
    if (index.compare) sel.appendChild(h("option", {value: "compare"}, "compare all"));
    sel.hidden = index.folders.length < 2 && !index.compare;
    sel.addEventListener("change", function () {
      location.hash = sel.value === "compare" ? "#/compare" : AD.link(sel.value, "summary");
    });
    window.addEventListener("hashchange", AD.render);
    AD.render();
  };

  // -- building blocks -------------------------------------------------------------------
  AD.cards = function (items) {
    return h("div", {class: "cards"}, items.filter(Boolean).map(function (it) {
      return h("div", {class: "card"}, h("div", {class: "k"}, it[0]),
        h("div", {class: "v"}, it[1] instanceof Node ? it[1] : AD.show(it[1])));
    }));
  };
  AD.section = function (title, ...kids) {
    return h("section", {}, h("h2", {}, title), kids);
  };

  // A sortable table. columns: [{key, label, num, fmt(v,row) -> string|Node, cls(row)}]
  AD.table = function (columns, rows, opts) {
    opts = opts || {};
    let limit = opts.limit || 300;  // more on request: big tables cost seconds to build
    const table = h("table", {class: "grid" + (opts.cls ? " " + opts.cls : "")});
    const thead = h("thead");
    const tbody = h("tbody");
    let sorted = rows.slice();
    let dir = 1;
    let by = null;
    function fill() {
      tbody.textContent = "";
      const shown = sorted.slice(0, limit);
      for (const row of shown) {
        const tr = h("tr", {class: opts.rowClass ? opts.rowClass(row) : ""});
        if (opts.rowId) tr.setAttribute("data-name", opts.rowId(row));
        for (const c of columns) {
          const v = c.get ? c.get(row) : row[c.key];
          const out = c.fmt ? c.fmt(v, row) : (c.num ? AD.fmtNum(v) : AD.show(v));
          tr.appendChild(h("td", {class: c.num ? "num" : ""}, out));
        }
        if (opts.onclick) {
          tr.classList.add("click");
          tr.addEventListener("click", function () { opts.onclick(row, tr); });
        }
        tbody.appendChild(tr);
      }
      if (sorted.length > limit) {
        tbody.appendChild(h("tr", {}, h("td", {colspan: columns.length, class: "more"},
          h("button", {class: "more", onclick: function () { limit = sorted.length; fill(); }},
            "show " + (sorted.length - limit) + " more rows"))));
      }
    }
    const tr = h("tr");
    for (const c of columns) {
      const th = h("th", {class: c.num ? "num" : "", title: c.title}, c.label);
      th.addEventListener("click", function () {
        dir = by === c ? -dir : 1;
        by = c;
        const get = c.get || function (r) { return r[c.key]; };
        sorted.sort(function (a, b) {
          const x = get(a), y = get(b);
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          return (x < y ? -1 : 1) * dir;
        });
        fill();
      });
      tr.appendChild(th);
    }
    thead.appendChild(tr);
    table.appendChild(thead);
    table.appendChild(tbody);
    fill();
    return h("div", {class: "tablewrap"}, table);
  };

  // A virtual list: only the visible rows exist in the DOM (10k-op graphs, big IR files).
  AD.virtualList = function (count, rowHeight, renderRow, height) {
    const outer = h("div", {class: "vlist", style: {height: (height || 480) + "px"}});
    const inner = h("div", {class: "vinner"});
    outer.appendChild(inner);
    let n = count;
    function draw() {
      inner.style.setProperty("height", n * rowHeight + "px");
      const first = Math.max(0, Math.floor(outer.scrollTop / rowHeight) - 5);
      const last = Math.min(n, first + Math.ceil(outer.clientHeight / rowHeight) + 10);
      inner.textContent = "";
      for (let i = first; i < last; i++) {
        const row = renderRow(i);
        row.classList.add("vrow");
        row.style.setProperty("top", i * rowHeight + "px");
        row.style.setProperty("height", rowHeight + "px");
        inner.appendChild(row);
      }
    }
    outer.addEventListener("scroll", function () { window.requestAnimationFrame(draw); });
    outer.redraw = function (newCount) { if (newCount !== undefined) n = newCount; draw(); };
    outer.scrollToRow = function (i) {
      outer.scrollTop = Math.max(0, i * rowHeight - outer.clientHeight / 3);
      draw();
    };
    window.requestAnimationFrame(draw);
    return outer;
  };

  AD.tip = function (evt, text) {
    const tip = document.getElementById("tip");
    if (!text) { tip.hidden = true; return; }
    tip.textContent = text;
    tip.hidden = false;
    tip.style.setProperty("left", Math.min(evt.clientX + 12, window.innerWidth - 320) + "px");
    tip.style.setProperty("top", evt.clientY + 12 + "px");
  };

  AD.color = function (key) {
    const palette = d3.schemeTableau10;
    let hash = 0;
    for (let i = 0; i < key.length; i++) hash = (hash * 31 + key.charCodeAt(i)) | 0;
    return palette[Math.abs(hash) % palette.length];
  };
  return AD;
})();
