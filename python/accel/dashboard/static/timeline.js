// Timeline: each trace's lanes on a canvas (fast with 100k events), zoom and pan with the
// wheel and drag (d3.zoom), hover for an event's name and times; "Open in Perfetto" hands
// the same events to ui.perfetto.dev (only when clicked: no network otherwise).
"use strict";
(function (AD) {
  const h = AD.h;
  const LANE = 26, AXIS = 24, LABEL = 170;
  const PERFETTO = "https://ui.perfetto.dev";

  AD.pages.timeline = function (main, m, fid) {
    main.appendChild(h("h1", {}, "Timeline"));
    const traces = m.timeline.traces;
    if (!traces.length) {
      main.appendChild(h("p", {class: "note"}, "No trace in this folder."));
      return;
    }
    traces.forEach(function (t, i) { main.appendChild(trace(t, i, m)); });
  };

  function toChromeTrace(t) {
    const events = [{name: "process_name", ph: "M", pid: 0, args: {name: t.title}}];
    t.lanes.forEach(function (lane, tid) {
      events.push({name: "thread_name", ph: "M", pid: 0, tid: tid, args: {name: lane.name}});
      for (const e of lane.events) {
        events.push({name: e[2], cat: e[3], ph: "X", pid: 0, tid: tid, ts: e[0], dur: e[1]});
      }
    });
    return {traceEvents: events, displayTimeUnit: "ns"};
  }

  // Perfetto's documented postMessage handshake: PING until PONG, then the trace buffer.
  AD.openPerfetto = function (t, name) {
    const win = window.open(PERFETTO);
    if (!win) return;
    const buffer = new TextEncoder().encode(JSON.stringify(toChromeTrace(t))).buffer;
    let tries = 0;
    const timer = setInterval(function () {
      win.postMessage("PING", PERFETTO);
      if (++tries > 60) clearInterval(timer);
    }, 500);
    window.addEventListener("message", function onPong(evt) {
      if (evt.origin !== PERFETTO || evt.data !== "PONG") return;
      clearInterval(timer);
      window.removeEventListener("message", onPong);
      win.postMessage({perfetto: {buffer: buffer, title: name, fileName: name + ".json"}},
        PERFETTO);
    });
  };

  function trace(t, index, m) {
    const box = h("section", {class: "trace", "data-trace": t.title});
    const total = t.lanes.reduce(function (a, l) { return a + l.events.length; }, 0);
    const reset = h("button", {}, "reset zoom");
    const download = h("button", {onclick: function () {
      const blob = new Blob([JSON.stringify(toChromeTrace(t))], {type: "application/json"});
      const a = h("a", {href: URL.createObjectURL(blob), download: "trace-" + index + ".json"});
      document.body.appendChild(a);
      a.click();
      a.remove();
    }}, "download trace JSON");
    const perfetto = h("button", {class: "perfetto", title: "opens ui.perfetto.dev (online)",
      onclick: function () { AD.openPerfetto(t, m.name + " " + t.title); }},
    "Open in Perfetto");
    box.appendChild(h("h2", {}, t.title, t.estimated ? h("span", {class: "badge light"},
      "estimated") : ""));
    box.appendChild(h("p", {class: "hint"}, "from " + t.source + " · " + total + " events · " +
      "end " + AD.fmtUs(t.end_us) + (t.truncated ? " · truncated" : "") +
      " · wheel to zoom, drag to pan"));
    box.appendChild(h("div", {class: "toolbar"}, reset, download, perfetto));
    const labels = h("div", {class: "lanes"}, h("div", {class: "axispad",
      style: {height: AXIS + "px"}}), t.lanes.map(function (lane) {
      return h("div", {class: "lane-label", style: {height: LANE + "px"}, title: lane.name},
        lane.name);
    }));
    const width = Math.max(400, Math.min(1400, (document.getElementById("main").clientWidth ||
      1000) - LABEL - 40));
    const height = AXIS + t.lanes.length * LANE;
    const canvas = h("canvas", {class: "tl", width: width * devicePixelRatio,
      height: height * devicePixelRatio, style: {width: width + "px", height: height + "px"}});
    box.appendChild(h("div", {class: "tlrow"}, labels, canvas));
    const ctx = canvas.getContext("2d");
    ctx.scale(devicePixelRatio, devicePixelRatio);
    const x0 = d3.scaleLinear().domain([0, Math.max(t.end_us, 1e-6)]).range([0, width]);
    let x = x0;

    function draw() {
      ctx.clearRect(0, 0, width, height);
      ctx.font = "11px sans-serif";
      ctx.fillStyle = "#555";
      ctx.strokeStyle = "#ccc";
      for (const tick of x.ticks(8)) {
        const px = x(tick);
        ctx.fillText(AD.fmtUs(tick), px + 2, 12);
        ctx.beginPath();
        ctx.moveTo(px, 16);
        ctx.lineTo(px, height);
        ctx.stroke();
      }
      const [d0, d1] = x.domain();
      t.lanes.forEach(function (lane, li) {
        const y = AXIS + li * LANE + 3;
        const evs = lane.events;
        let lo = d3.bisector(function (e) { return e[0]; }).left(evs, d0 -
          (t.end_us || 0));
        lo = Math.max(0, lo);
        for (let i = lo; i < evs.length; i++) {
          const e = evs[i];
          if (e[0] > d1) break;
          if (e[0] + e[1] < d0) continue;
          const px = x(e[0]);
          const w = Math.max(1, x(e[0] + e[1]) - px);
          ctx.fillStyle = AD.color(e[3] || e[2]);
          ctx.fillRect(px, y, w, LANE - 6);
          if (w > 40) {
            ctx.fillStyle = "#fff";
            ctx.save();
            ctx.beginPath();
            ctx.rect(px, y, w, LANE - 6);
            ctx.clip();
            ctx.fillText(e[2], px + 3, y + 13);
            ctx.restore();
          }
        }
      });
    }
    const zoom = d3.zoom().scaleExtent([1, 1e7]).translateExtent([[0, 0], [width, height]])
      .extent([[0, 0], [width, height]]).on("zoom", function (evt) {
        x = evt.transform.rescaleX(x0);
        draw();
      });
    d3.select(canvas).call(zoom);
    reset.addEventListener("click", function () {
      d3.select(canvas).call(zoom.transform, d3.zoomIdentity);
    });
    canvas.addEventListener("mousemove", function (evt) {
      const rect = canvas.getBoundingClientRect();
      const li = Math.floor((evt.clientY - rect.top - AXIS) / LANE);
      const lane = t.lanes[li];
      if (!lane) { AD.tip(evt, null); return; }
      const at = x.invert(evt.clientX - rect.left);
      const hit = lane.events.find(function (e) { return e[0] <= at && at <= e[0] + e[1]; });
      AD.tip(evt, hit ? hit[2] + " · " + (hit[3] || "") + " · start " + AD.fmtUs(hit[0]) +
        " · " + AD.fmtUs(hit[1]) : null);
    });
    canvas.addEventListener("mouseleave", function (evt) { AD.tip(evt, null); });
    draw();
    return box;
  }
})(window.AD);
