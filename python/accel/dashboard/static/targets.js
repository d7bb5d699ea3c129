// Target pages: rdu (sections against the chip's limits), mncore (layers, layouts, SRAM,
// schedulers), nvgpu (kernels and launches, ptxas), cpu (functions, vector widths).
"use strict";
(function (AD) {
  const h = AD.h;

  // Grouped bars (one group per item, one bar per series) with limit lines; d3, SVG.
  AD.barChart = function (o) {
    const M = {t: 16, r: 16, b: 70, l: 56};
    const W = Math.max(o.minWidth || 640, o.items.length * o.series.length * 9 + M.l + M.r);
    const H = o.height || 260;
    const svg = d3.create("svg").attr("class", "chart " + (o.cls || "")).attr("width", W)
      .attr("height", H);
    const x = d3.scaleBand().domain(o.items.map(function (_, i) { return i; }))
      .range([M.l, W - M.r]).padding(0.2);
    const xs = d3.scaleBand().domain(o.series).range([0, x.bandwidth()]).padding(0.05);
    const top = d3.max(o.items, function (it) { return d3.max(o.series, function (s) {
      return it.values[s] || 0; }); }) || 1;
    const limits = (o.limits || []).filter(function (l) { return l.value; });
    const withLimits = o.showLimits ? d3.max(limits, function (l) { return l.value; }) || 0 : 0;
    const y = d3.scaleLinear().domain([0, Math.max(top, withLimits) * 1.08]).nice()
      .range([H - M.b, M.t]);
    svg.append("g").attr("transform", "translate(" + M.l + ",0)").call(d3.axisLeft(y).ticks(5));
    svg.append("text").attr("x", 4).attr("y", 10).attr("class", "axislabel").text(o.yLabel || "");
    const groups = svg.append("g").selectAll("g").data(o.items).join("g")
      .attr("transform", function (_, i) { return "translate(" + x(i) + ",0)"; });
    groups.selectAll("rect").data(function (it) {
      return o.series.map(function (s) { return {s: s, v: it.values[s] || 0, it: it}; });
    }).join("rect")
      .attr("x", function (d) { return xs(d.s); }).attr("width", xs.bandwidth())
      .attr("y", function (d) { return y(d.v); })
      .attr("height", function (d) { return y(0) - y(d.v); })
      .attr("class", function (d) { return "bar-" + d.s + (d.it.over ? " over" : ""); })
      .append("title").text(function (d) { return d.it.label + ": " + d.s + " " + d.v; });
    const step = Math.ceil(o.items.length / Math.max(1, (W - M.l) / 14));
    groups.filter(function (_, i) { return i % step === 0; }).append("text")
      .attr("class", "xlabel").attr("transform", "translate(" + x.bandwidth() / 2 + "," +
        (H - M.b + 8) + ") rotate(45)").text(function (it) { return it.label.slice(0, 16); });
    for (const l of limits) {
      if (y(l.value) < M.t) {
        svg.append("text").attr("class", "limit-off").attr("x", W - M.r).attr("y", M.t + 10)
          .attr("text-anchor", "end").text(l.label + " " + l.value + " (above the scale)");
        continue;
      }
      svg.append("line").attr("class", "limit").attr("x1", l.x0 === undefined ? M.l : x(l.x0))
        .attr("x2", l.x1 === undefined ? W - M.r : x(l.x1) + x.bandwidth())
        .attr("y1", y(l.value)).attr("y2", y(l.value));
      svg.append("text").attr("class", "limit-label").attr("x", (l.x0 === undefined ? M.l :
        x(l.x0)) + 4).attr("y", y(l.value) - 3).text(l.label + " " + l.value);
    }
    const legend = h("div", {class: "legend"}, o.series.map(function (s) {
      return h("span", {}, h("i", {class: "sw bar-" + s}), s);
    }));
    return h("div", {class: "chartbox"}, legend, svg.node());
  };

  // A step line over x (e.g. SRAM bytes over schedule time) with an optional limit.
  AD.stepChart = function (o) {
    const M = {t: 16, r: 16, b: 36, l: 70};
    const W = o.width || 900, H = o.height || 240;
    const svg = d3.create("svg").attr("class", "chart " + (o.cls || "")).attr("width", W)
      .attr("height", H);
    const pts = o.points;
    const x = d3.scaleLinear().domain([0, d3.max(pts, function (p) { return p[0]; }) || 1])
      .range([M.l, W - M.r]);
    const top = d3.max(pts, function (p) { return p[1]; }) || 1;
    const y = d3.scaleLinear().domain([0, top * 1.1]).nice().range([H - M.b, M.t]);
    svg.append("g").attr("transform", "translate(0," + (H - M.b) + ")").call(d3.axisBottom(x)
      .ticks(8));
    svg.append("g").attr("transform", "translate(" + M.l + ",0)").call(d3.axisLeft(y).ticks(5)
      .tickFormat(o.yFormat || null));
    svg.append("path").attr("class", "step").datum(pts)
      .attr("d", d3.line().curve(d3.curveStepAfter).x(function (p) { return x(p[0]); })
        .y(function (p) { return y(p[1]); }));
    svg.append("text").attr("class", "axislabel").attr("x", W - M.r).attr("y", H - 4)
      .attr("text-anchor", "end").text(o.xLabel || "");
    svg.append("text").attr("class", "axislabel").attr("x", 4).attr("y", 10).text(o.yLabel || "");
    if (o.limit) {
      if (y(o.limit) >= M.t) {
        svg.append("line").attr("class", "limit").attr("x1", M.l).attr("x2", W - M.r)
          .attr("y1", y(o.limit)).attr("y2", y(o.limit));
      } else {
        svg.append("text").attr("class", "limit-off").attr("x", W - M.r).attr("y", M.t + 10)
          .attr("text-anchor", "end").text(o.limitLabel + " (above the scale)");
      }
    }
    return h("div", {class: "chartbox"}, svg.node());
  };

  function highlight(main, params) {
    const name = params.get("hl");
    if (!name) return;
    window.requestAnimationFrame(function () {
      for (const tr of main.querySelectorAll("tr[data-name]")) {
        if (tr.getAttribute("data-name") === name) {
          tr.classList.add("hl");
          tr.scrollIntoView({block: "center"});
        }
      }
    });
  }

  AD.pages.target = function (main, m, fid, params) {
    const render = {rdu: rdu, mncore: mncore, nvgpu: nvgpu, cpu: cpu}[m.target];
    if (!render || !m.target_page) {
      main.appendChild(h("p", {class: "note"}, "No target page for " + m.target));
      return;
    }
    render(main, m.target_page, m, fid);
    highlight(main, params);
  };

  function graphLink(fid, name) {
    return h("a", {href: AD.link(fid, "graph", {q: name}), class: "oplink"}, name);
  }

  // -- rdu --------------------------------------------------------------------------------
  function rdu(main, p, m, fid) {
    main.appendChild(h("h1", {}, "RDU: sections"));
    main.appendChild(AD.cards([
      ["arch", p.arch], ["sections", p.sections.length],
      ["hypersections", p.hypersections.length], ["chips", p.chips.length],
      ["estimated per run", AD.fmtUs(p.total_us)],
      p.chips.length > 1 ? ["pipeline stage (slowest chip)", AD.fmtUs(p.stage_us)] : null,
      ["over the limit", p.over_limit.length ? p.over_limit.join(", ") : "none"],
    ]));
    let showLimits = false;
    const chartHost = h("div", {id: "rdu-chart"});
    function drawChart() {
      chartHost.textContent = "";
      const limits = [];
      p.phases.forEach(function (ph) {
        const idx = p.sections.map(function (s, i) { return s.phase === ph.phase ? i : -1; })
          .filter(function (i) { return i >= 0; });
        limits.push({value: ph.pcu_limit, label: ph.phase + " PCU limit", x0: idx[0],
          x1: idx[idx.length - 1]});
        if (ph.pmu_limit !== ph.pcu_limit) {
          limits.push({value: ph.pmu_limit, label: ph.phase + " PMU limit", x0: idx[0],
            x1: idx[idx.length - 1]});
        }
      });
      chartHost.appendChild(AD.barChart({cls: "rdu", series: ["PCU", "PMU"], yLabel: "units",
        showLimits: showLimits, limits: limits,
        items: p.sections.map(function (s) {
          return {label: s.name, values: {PCU: s.pcu, PMU: s.pmu},
            over: p.over_limit.includes(s.name)};
        })}));
    }
    const toggle = h("button", {onclick: function () {
      showLimits = !showLimits;
      toggle.textContent = showLimits ? "scale to the sections" : "scale to the chip's limits";
      drawChart();
    }}, "scale to the chip's limits");
    main.appendChild(AD.section("PCUs and PMUs per section", toggle, chartHost));
    drawChart();
    main.appendChild(AD.section("Limits per phase", AD.table([
      {key: "phase", label: "phase"}, {key: "sections", label: "sections", num: true},
      {key: "us", label: "estimated", fmt: AD.fmtUs},
      {key: "pcu_limit", label: "PCU limit", num: true},
      {key: "max_pcu", label: "max PCU", num: true},
      {key: "pmu_limit", label: "PMU limit", num: true},
      {key: "max_pmu", label: "max PMU", num: true},
    ], p.phases)));
    if (p.training) {
      main.appendChild(AD.section("Training", AD.table([{key: 0, label: "setting"},
        {key: 1, label: "value"}], Object.entries(p.training))));
    }
    main.appendChild(AD.section("Chips and pipeline stages", AD.table([
      {key: "chip", label: "chip", num: true}, {key: "sections", label: "sections", num: true},
      {key: "first", label: "first section"}, {key: "last", label: "last section"},
      {key: "us", label: "estimated", fmt: AD.fmtUs},
    ], p.chips)));
    main.appendChild(AD.section("Hypersections", p.hypersections.length ? AD.table([
      {key: "name", label: "hypersection"}, {key: "instances", label: "instances", num: true},
      {key: "members", label: "sections", fmt: function (v) { return v.join(", "); }},
    ], p.hypersections, {rowId: function (r) { return r.name; }}) :
      h("p", {class: "note"}, "none (repeated modules become hypersections at -o0/-o1, or " +
        "with --enable-hypersection)")));
    main.appendChild(AD.section("Sections", AD.table([
      {key: "index", label: "#", num: true},
      {key: "name", label: "section", fmt: function (v) { return graphLink(fid, v); }},
      {key: "phase", label: "phase"}, {key: "chip", label: "chip", num: true},
      {key: "pcu", label: "PCU", num: true}, {key: "pmu", label: "PMU", num: true},
      {key: "est_us", label: "estimated", fmt: AD.fmtUs},
      {key: "transfer_us", label: "transfer", fmt: AD.fmtUs},
      {key: "hypersection", label: "hypersection"},
      {key: "ops", label: "PyTorch operators", fmt: function (v) { return v.join(", "); }},
    ], p.sections, {cls: "sections", rowId: function (r) { return r.name; },
      rowClass: function (r) { return p.over_limit.includes(r.name) ? "over" : ""; }})));
  }

  // -- mncore -----------------------------------------------------------------------------
  function mncore(main, p, m, fid) {
    main.appendChild(h("h1", {}, "MN-Core: layers"));
    const stats = p.perf_stats || {};
    main.appendChild(AD.cards([
      ["layers", p.layers.length], ["scheduler", p.scheduler],
      ["layout planner", p.layout_planner], ["float_dtype", p.float_dtype],
      ["estimated (ALL)", stats.ALL ? AD.fmtUs(stats.ALL.time_us) : null],
      ["relayouts", p.relayouts.length], ["SA steps", p.sa_steps],
      ["recomputed", (p.recomputed || []).length],
    ]));
    const rows = Object.entries(stats).map(function (e) {
      return Object.assign({name: e[0]}, e[1]);
    });
    const all = stats.ALL ? stats.ALL.time_us : 1;
    main.appendChild(AD.section("Perf stats", AD.table([
      {key: "name", label: "attribute"},
      {key: "time_us", label: "time", fmt: AD.fmtUs},
      {key: "time_us", label: "of ALL", fmt: function (v) {
        return h("div", {class: "bar"}, h("div", {style: {width: Math.min(100, 100 * v / all) +
          "%"}}));
      }},
      {key: "count", label: "count", num: true}, {key: "bytes", label: "bytes", num: true},
    ], rows, {cls: "perfstats"})));
    const pts = [];
    for (const l of p.layers) pts.push([l.start_us, l.sram]);
    if (p.layers.length) {
      const last = p.layers[p.layers.length - 1];
      pts.push([last.start_us + last.time_us, last.sram]);
    }
    main.appendChild(AD.section("SRAM (LM) in use over the schedule",
      AD.stepChart({cls: "sram", points: pts, xLabel: "schedule time (µs)",
        yLabel: "bytes", yFormat: d3.format(".2s"), limit: p.sram_limit,
        limitLabel: "LM budget " + AD.fmtBytes(p.sram_limit)})));
    const sch = p.schedulers || {rows: []};
    main.appendChild(AD.section("Scheduler comparison", h("p", {class: "hint"}, sch.note || ""),
      AD.barChart({cls: "schedulers", series: ["time"], yLabel: "µs", minWidth: 420,
        items: sch.rows.map(function (r) {
          return {label: r.scheduler, values: {time: r.time_us || 0}};
        })}),
      AD.table([
        {key: "scheduler", label: "scheduler", fmt: function (v, r) {
          return r.own ? h("b", {}, v + " (this build)") : v;
        }},
        {key: "time_us", label: "estimated", fmt: AD.fmtUs},
        {key: "peak_sram", label: "peak SRAM", fmt: AD.fmtBytes},
        {key: "dma_bytes", label: "DMA", fmt: AD.fmtBytes},
        {key: "recomputed", label: "recomputed", num: true},
      ], sch.rows, {cls: "schedtable"})));
    main.appendChild(AD.section("Layers (schedule order)", AD.table([
      {key: "name", label: "layer", fmt: function (v) { return graphLink(fid, v); }},
      {key: "op", label: "op"},
      {key: "shape", label: "shape"}, {key: "layout", label: "layout"},
      {key: "time_us", label: "time", fmt: AD.fmtUs},
      {key: "sram", label: "SRAM", fmt: AD.fmtBytes},
      {key: "dma_bytes", label: "DMA", fmt: AD.fmtBytes},
      {key: "slices", label: "slices", num: true},
    ], p.layers, {cls: "layers", rowId: function (r) { return r.name; }})));
    main.appendChild(AD.section("Relayouts", p.relayouts.length ? AD.table([
      {key: "tensor", label: "tensor"}, {key: "consumer", label: "for"},
      {key: "src", label: "from"}, {key: "dst", label: "to"},
      {key: "bytes", label: "bytes", num: true},
    ], p.relayouts) : h("p", {class: "note"}, "none: every consumer reads its input in the " +
      "layout it was written in")));
    if (p.tensors.length) {
      main.appendChild(AD.section("Layouts (every tensor)", AD.table([
        {key: "tensor", label: "tensor"}, {key: "shape", label: "shape"},
        {key: "kind", label: "kind"}, {key: "producer", label: "producer"},
        {key: "layout", label: "layout"},
      ], p.tensors, {cls: "layouts"}),
      m.files.some(function (f) { return f.path === "layout.html"; }) ?
        h("a", {href: AD.rawUrl(fid, "layout.html"), target: "_blank", rel: "noopener"},
          "layout.html") : ""));
    }
  }

  // -- nvgpu ------------------------------------------------------------------------------
  function nvgpu(main, p, m, fid) {
    main.appendChild(h("h1", {}, "NVGPU: kernels"));
    if (p.host_reason) {
      main.appendChild(h("p", {class: "warn"}, "runs on the host CPU: " + p.host_reason));
    }
    const total = Object.values(p.buffers).reduce(function (a, b) { return a + b.bytes; }, 0);
    main.appendChild(AD.cards([
      ["arch", p.arch], ["kernels", p.kernels.length],
      ["launches", p.launches.filter(function (l) { return l.op === "launch"; }).length],
      ["device buffers", AD.fmtBytes(total)],
      ["max registers", d3.max(p.kernels, function (k) { return k.registers; })],
    ]));
    main.appendChild(h("p", {class: "hint"}, p.ptxas_note));
    if (p.kernels.some(function (k) { return k.registers !== null; })) {
      main.appendChild(AD.section("Registers and shared memory per kernel",
        AD.barChart({cls: "regs", series: ["registers"], yLabel: "registers",
          items: p.kernels.map(function (k) {
            return {label: k.name, values: {registers: k.registers || 0}};
          })})));
    }
    main.appendChild(AD.section("Kernels", AD.table([
      {key: "name", label: "kernel", fmt: function (v) { return graphLink(fid, v); }},
      {key: "file", label: "PTX", fmt: function (v) {
        return h("a", {href: AD.link(fid, "file", {path: v})}, v);
      }},
      {key: "registers", label: "registers", num: true},
      {key: "smem", label: "static smem", fmt: AD.fmtBytes},
      {key: "barriers", label: "barriers", num: true},
      {key: "stack", label: "stack", num: true},
      {key: "spill_stores", label: "spill st", num: true},
      {key: "spill_loads", label: "spill ld", num: true},
      {key: "launches", label: "launches", num: true},
      {key: "error", label: "ptxas"},
    ], p.kernels, {cls: "kernels", rowId: function (r) { return r.name; }})));
    main.appendChild(AD.section("Launches (in order)", AD.table([
      {key: "function", label: "function"}, {key: "index", label: "#", num: true},
      {key: "op", label: "step"}, {key: "kernel", label: "kernel"},
      {key: "grid", label: "grid", fmt: function (v) { return v.join("×"); }},
      {key: "block", label: "block", fmt: function (v) { return v.join("×"); }},
      {key: "threads", label: "threads", num: true},
      {key: "dynamic_smem", label: "dynamic smem", fmt: AD.fmtBytes},
      {key: "args", label: "args", num: true},
    ], p.launches, {cls: "launches"})));
    main.appendChild(AD.section("Device buffers", AD.table([
      {key: 0, label: "kind"}, {key: 1, label: "count", get: function (r) { return r[1].count; },
        num: true},
      {key: 1, label: "bytes", get: function (r) { return r[1].bytes; }, fmt: AD.fmtBytes},
    ], Object.entries(p.buffers))));
  }

  // -- cpu --------------------------------------------------------------------------------
  function cpu(main, p, m, fid) {
    main.appendChild(h("h1", {}, "CPU: functions"));
    main.appendChild(AD.cards([
      ["vector ISA", p.isa], ["functions", p.functions.length],
      ["parallel loops", p.parallel_loops],
      ["threads", p.threads === null || p.threads === undefined ?
        "ACCEL_NUM_THREADS, else every core the process may use" : p.threads],
    ]));
    for (const n of p.notes) main.appendChild(h("p", {class: "hint"}, n));
    const withCode = p.functions.filter(function (f) { return f.instructions; });
    if (withCode.length) {
      main.appendChild(AD.section("Packed SIMD instructions per function (machine code)",
        AD.barChart({cls: "simd", series: ["simd128", "simd256", "simd512"],
          yLabel: "instructions", items: withCode.map(function (f) {
            return {label: f.name, values: {simd128: f.simd128, simd256: f.simd256,
              simd512: f.simd512}};
          })})));
    }
    main.appendChild(AD.section("Functions", AD.table([
      {key: "name", label: "function"},
      {key: "ir_lines", label: "IR lines", num: true},
      {key: "ir_vector_bits", label: "IR vector bits", num: true},
      {key: "ir_vectors", label: "IR vector types", fmt: function (v) {
        return (v || []).join(" ");
      }},
      {key: "instructions", label: "instructions", num: true},
      {key: "machine_vector_bits", label: "widest SIMD", num: true},
      {key: "simd256", label: "256-bit ops", num: true},
      {key: "simd512", label: "512-bit ops", num: true},
      {key: "parallel_loops", label: "parallel loops", num: true},
      {key: "parallel_bodies", label: "loop bodies", fmt: function (v) {
        return (v || []).join(", ");
      }},
      {key: "libmvec", label: "libmvec", fmt: function (v) { return (v || []).join(", "); }},
    ], p.functions, {cls: "functions", rowId: function (r) { return r.name; }})));
  }
})(window.AD);
