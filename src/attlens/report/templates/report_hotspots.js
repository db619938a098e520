
  // ------------------------------------------------------------------ hotspots of a clock range
  // DATA.scope: hit, latency, instruction stall and idle per (pc, clock bin),
  // only cells with a record (report/viewerdata.py, scope). Any range of
  // whole bins is a sum of cells, so the totals, the latency histogram and
  // the tables of a brushed range are exact for the records that started in
  // it (first issue attempt, SE clocks aligned as in the wave timeline).
  var SC = DATA.scope;
  function renderHotspots() {
    var s = section("hotspots");
    if (!SC) { s.appendChild(el("p", { class: "muted", text: "No instruction record to scope." })); return; }
    var nb = SC.bins, cells = SC.cells, step = cells[0], cHit = cells[1], cLat = cells[2], cStall = cells[3], cIdle = cells[4];
    var nC = step.length, cellRow = new Int32Array(nC), cellBin = new Int32Array(nC), flat = 0;
    var binLat = new Float64Array(nb), binStall = new Float64Array(nb);
    for (var k = 0; k < nC; k++) {
      flat += step[k];
      var pc = Math.floor(flat / nb), r = rowOfPc[pc];
      cellRow[k] = r === undefined ? -1 : r;
      cellBin[k] = flat - pc * nb;
      binLat[cellBin[k]] += cLat[k];
      binStall[cellBin[k]] += cStall[k];
    }
    var rng = [0, nb], agg = null;
    var mhz = TL && TL.clock_mhz;
    function cyclesText(c0, c1) { return "cycles " + fmtInt(c0) + " – " + fmtInt(c1) + (mhz ? " (" + fmtNum((c1 - c0) / mhz, 2) + " µs)" : ""); }

    s.appendChild(el("p", { class: "muted", text: "Drag across the strip to pick a clock range (it snaps to " + fmtInt(nb) + " bins of " + fmtInt(SC.bin_cycles) + " cycles): the totals, the latency histogram and the tables below are recomputed from the instruction executions that started in it (first issue attempt; SE clocks aligned as in the wave timeline). By default the whole dispatch, whose totals equal the headline." }));
    var rangeText = el("span", { class: "muted", id: "scope-range" });
    s.appendChild(el("div", { class: "controls" },
      el("button", { id: "scope-all", text: "whole dispatch", onclick: function () { setRange(0, nb); } }),
      el("button", { id: "scope-timeline", text: "the wave timeline's view", title: "scope to the time range the wave timeline shows (zoom it first)", onclick: function () {
        if (!api.timeline) return;
        var v = api.timeline.view(), f = TL.bin_cycles / SC.bin_cycles;
        setRange(Math.floor(v[0] * f), Math.ceil(v[1] * f));
      } }), rangeText));
    var wrap = el("div", { class: "tl-wrap" }), strip = el("canvas", { id: "scope-canvas", "aria-label": "latency and instruction stall over time; drag to pick a range" });
    wrap.appendChild(strip);
    s.appendChild(wrap);
    s.appendChild(el("div", { class: "legend" }, el("span", null, el("span", { class: "swatch", style: { background: "#4a7bd0" } }), "latency per bin"),
      el("span", null, el("span", { class: "swatch", style: { background: STATE_COLORS.STALL } }), "instruction stall per bin"), el("span", null, el("span", { class: "swatch", style: { background: "rgba(47,111,223,0.18)", border: "1px solid #2f6fdf" } }), "picked range")));
    var cards = el("div", { class: "cards", id: "scope-cards" });
    s.appendChild(cards);

    var grid = el("div", { class: "grid2" }), left = el("div"), right = el("div");
    grid.appendChild(left); grid.appendChild(right);
    s.appendChild(grid);
    var histBins = el("select", { id: "hist-bins" }, [16, 32, 64, 128].map(function (n) { return el("option", { value: n, text: n + " bins", selected: n === 32 ? "selected" : null }); }));
    var histMetric = el("select", { id: "hist-metric" }, el("option", { value: "latency", text: "latency" }), STALL_OK ? el("option", { value: "stall", text: "instruction stall" }) : null);
    left.appendChild(el("h3", { text: "Latency histogram over the code" }));
    left.appendChild(el("p", { class: "muted", text: "The kernel's instructions in program order cut into equal bins (as the viewer's hotspot histogram); each bar is the cycles of the executions in the range, stacked by class. Click a bar to list its instructions in the ISA view." }));
    left.appendChild(el("div", { class: "controls" }, histBins, histMetric));
    var hist = el("div", { id: "latency-hist" });
    left.appendChild(hist);
    var metric = el("select", { id: "scope-metric" }, (STALL_OK ? ["stall", "latency", "idle", "hit"] : ["latency", "idle", "hit"]).map(function (m) { return el("option", { value: m, text: m === "stall" ? "instruction stall" : m === "hit" ? "executions" : m }); }));
    var topIns = el("div"), topLines = el("div"), byClass = el("div");
    right.appendChild(el("h3", { text: "Classes in the range" }));
    right.appendChild(el("p", { class: "muted", text: "Each instruction under its ISA-view class (a wait under the class it mostly waited on; the headline's class table splits each wait over its producers instead)." }));
    right.appendChild(byClass);
    s.appendChild(el("h3", { text: "Top instructions in the range" }));
    if (!STALL_OK) s.appendChild(el("p", { class: "muted", id: "scope-stall-unrecorded", text: STALL_NOTE }));
    s.appendChild(el("div", { class: "controls" }, el("label", null, "by ", metric)));
    s.appendChild(topIns);
    s.appendChild(el("h3", { text: "Top source lines in the range" }));
    s.appendChild(topLines);

    function aggregate(b0, b1) {
      var a = { hit: new Float64Array(nIsa), latency: new Float64Array(nIsa), stall: new Float64Array(nIsa), idle: new Float64Array(nIsa), tot: { hit: 0, latency: 0, stall: 0, idle: 0 } };
      for (var k = 0; k < nC; k++) {
        var b = cellBin[k], r = cellRow[k];
        if (b < b0 || b >= b1 || r < 0) continue;
        a.hit[r] += cHit[k]; a.latency[r] += cLat[k]; a.stall[r] += cStall[k]; a.idle[r] += cIdle[k];
        a.tot.hit += cHit[k]; a.tot.latency += cLat[k]; a.tot.stall += cStall[k]; a.tot.idle += cIdle[k];
      }
      return a;
    }
    function sizeStrip() {
      var dpr = window.devicePixelRatio || 1, w = Math.max(300, wrap.clientWidth), h = 70;
      strip.style.height = h + "px";
      if (strip.width !== Math.round(w * dpr) || strip.height !== Math.round(h * dpr)) { strip.width = Math.round(w * dpr); strip.height = Math.round(h * dpr); }
      var ctx = strip.getContext("2d");
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      return { ctx: ctx, w: w, h: h };
    }
    var gutter = 120, brush = null;
    function drawStrip() {
      var g = sizeStrip(), ctx = g.ctx, plotW = g.w - gutter, bw = plotW / nb, top = 6, h = g.h - 22, maxV = 1;
      ctx.clearRect(0, 0, g.w, g.h);
      for (var b = 0; b < nb; b++) maxV = Math.max(maxV, binLat[b]);
      var sel = brush ? [Math.min(brush.a, brush.b), Math.max(brush.a, brush.b) + 1] : rng;
      ctx.fillStyle = "rgba(47,111,223,0.18)";
      ctx.fillRect(gutter + sel[0] * bw, 0, (sel[1] - sel[0]) * bw, top + h);
      for (b = 0; b < nb; b++) {
        var hl = binLat[b] / maxV * h, hs = binStall[b] / maxV * h;
        ctx.fillStyle = "#4a7bd0"; ctx.fillRect(gutter + b * bw, top + h - hl, Math.max(1, bw - 1), hl);
        ctx.fillStyle = STATE_COLORS.STALL; ctx.fillRect(gutter + b * bw, top + h - hs, Math.max(1, bw - 1), hs);
      }
      ctx.strokeStyle = "#2f6fdf"; ctx.lineWidth = 1.5;
      ctx.strokeRect(gutter + sel[0] * bw, 0.75, (sel[1] - sel[0]) * bw, top + h - 0.75);
      ctx.fillStyle = "#1d2330"; ctx.fillRect(gutter, top + h, plotW, 1);
      ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
      ctx.fillText("cycles per bin", 4, top + 8);
      ctx.fillText("max " + fmtCompact(maxV), 4, top + 24);
      ctx.textBaseline = "top";
      var span = SC.bins * SC.bin_cycles, raw = span / Math.max(2, plotW / 110), p10 = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p10, stepC = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p10;
      for (var tc = 0; tc <= span; tc += stepC) {
        var xt = gutter + tc / span * plotW;
        ctx.fillRect(xt, top + h, 1, 4);
        ctx.fillText(mhz ? fmtNum(tc / mhz, tc / mhz < 10 ? 2 : 1) + " µs" : fmtCompact(tc), xt + 2, top + h + 5);
      }
      strip.dataset.range = rng.join(",");
    }
    function binAt(ev) {
      var r = strip.getBoundingClientRect(), x = ev.clientX - r.left;
      return Math.max(0, Math.min(nb - 1, Math.floor((x - gutter) / (r.width - gutter) * nb)));
    }
    strip.addEventListener("mousedown", function (ev) { var b = binAt(ev); brush = { a: b, b: b }; drawStrip(); ev.preventDefault(); });
    strip.addEventListener("mousemove", function (ev) { if (brush) { brush.b = binAt(ev); drawStrip(); } });
    window.addEventListener("mouseup", function () {
      if (!brush) return;
      var a = Math.min(brush.a, brush.b), b = Math.max(brush.a, brush.b) + 1;
      brush = null;
      setRange(a, b);
    });

    function renderCards() {
      var t = agg.tot;
      cards.textContent = "";
      add(cards, [
        card("sc-records", fmtInt(t.hit), "instruction executions"),
        card("sc-latency", fmtInt(t.latency), "latency cycles"),
        card("sc-stall", fmtStall(t.stall), "instruction stall cycles", STALL_TERMS),
        card("sc-stall-share", fmtStallPct(t.latency ? t.stall / t.latency : null), "instruction stall, share of latency"),
        card("sc-idle", fmtInt(t.idle), "idle cycles")
      ]);
    }
    function renderHist() {
      hist.textContent = "";
      var n = Number(histBins.value), met = histMetric.value, stepR = Math.max(1, Math.ceil(nIsa / n)), nBars = Math.ceil(nIsa / stepR);
      var classes = ISA.classes, sums = [], tot = [];
      for (var b = 0; b < nBars; b++) { sums.push(new Float64Array(classes.length)); tot.push(0); }
      for (var r = 0; r < nIsa; r++) { var v = agg[met][r]; if (v) { sums[Math.floor(r / stepR)][ISA.cls[r]] += v; tot[Math.floor(r / stepR)] += v; } }
      var maxT = Math.max.apply(null, tot.concat([1])) * 1.04;
      var W2 = 560, H2 = 190, lw = 56, bh = H2 - 28, bwid = (W2 - lw - 4) / nBars;
      var g = svg("svg", { viewBox: "0 0 " + W2 + " " + H2, width: "100%", role: "img", "aria-label": met + " histogram over the code" });
      g.style.maxWidth = W2 + "px";
      g.appendChild(svg("line", { x1: lw, y1: bh + 2, x2: W2, y2: bh + 2, stroke: "#9aa3b2" }));
      g.appendChild(svg("text", { x: lw - 4, y: 10, "text-anchor": "end" }, fmtCompact(maxT / 1.04)));
      g.appendChild(svg("text", { x: lw - 4, y: bh + 2, "text-anchor": "end" }, "0"));
      for (b = 0; b < nBars; b++) {
        var r0 = b * stepR, r1 = Math.min(nIsa, r0 + stepR) - 1;
        var bar = svg("g", { class: "hbin", "data-bin": b, "data-pc0": ISA.pc[r0], "data-pc1": ISA.pc[r1], "data-total": tot[b] });
        var y = bh + 2, parts = [];
        for (var c = 0; c < classes.length; c++) {
          var v2 = sums[b][c];
          if (!v2) continue;
          var hh = v2 / maxT * bh;
          y -= hh;
          bar.appendChild(svg("rect", { x: (lw + 2 + b * bwid).toFixed(2), y: y.toFixed(2), width: Math.max(1, bwid - 1).toFixed(2), height: hh.toFixed(2), fill: classColor(classes[c]) }));
          parts.push(classes[c] + " " + fmtInt(v2));
        }
        bar.appendChild(svg("rect", { x: (lw + 2 + b * bwid).toFixed(2), y: 0, width: Math.max(1, bwid - 1).toFixed(2), height: bh + 2, fill: "transparent" }));
        bar.appendChild(svg("title", {}, "pcs " + ISA.pc[r0] + "–" + ISA.pc[r1] + ": " + fmtInt(tot[b]) + " cycles" + (parts.length ? "\n" + parts.join("\n") : "")));
        bar.addEventListener("click", (function (a, z) { return function () { if (api.filterIsa) { api.filterIsa("pc:" + a + "-" + z); section("code").scrollIntoView({ block: "start" }); } }; })(ISA.pc[r0], ISA.pc[r1]));
        g.appendChild(bar);
      }
      g.appendChild(svg("text", { x: lw + 2, y: H2 - 8 }, "pc " + ISA.pc[0]));
      g.appendChild(svg("text", { x: W2 - 2, y: H2 - 8, "text-anchor": "end" }, "pc " + ISA.pc[nIsa - 1]));
      hist.appendChild(g);
    }
    function renderTables() {
      var m = metric.value, rows = [];
      for (var r = 0; r < nIsa; r++) if (agg[m][r] > 0) rows.push(r);
      rows.sort(function (a, b) { return agg[m][b] - agg[m][a] || ISA.pc[a] - ISA.pc[b]; });
      topIns.textContent = "";
      topIns.appendChild(table([{ label: "pc" }, { label: "instruction" }, { label: "class" }, { label: "executions", num: 1 }, { label: "latency", num: 1 }, { label: "stall", num: 1, title: "instruction stall" }, { label: "idle", num: 1 }],
        rows.slice(0, 20).map(function (r) {
          return { attrs: { data: { pc: ISA.pc[r] } }, cells: [pcRef(ISA.pc[r]), el("code", { class: "ins-wrap", text: ISA.text[r] }), ISA.classes[ISA.cls[r]],
            fmtInt(agg.hit[r]), fmtInt(agg.latency[r]), fmtStall(agg.stall[r]), fmtInt(agg.idle[r])] };
        }), { id: "scope-instructions" }));
      var lines = SRC.lines.map(function (ln, li) {
        var v = { li: li, hit: 0, latency: 0, stall: 0, idle: 0 };
        ln.pcs.forEach(function (pc) { var r = rowOfPc[pc]; if (r !== undefined) { v.hit += agg.hit[r]; v.latency += agg.latency[r]; v.stall += agg.stall[r]; v.idle += agg.idle[r]; } });
        return v;
      }).filter(function (v) { return v[m] > 0; });
      lines.sort(function (a, b) { return b[m] - a[m] || a.li - b.li; });
      topLines.textContent = "";
      topLines.appendChild(table([{ label: "source line" }, { label: "executions", num: 1 }, { label: "latency", num: 1 }, { label: "stall", num: 1, title: "instruction stall" }, { label: "idle", num: 1 }],
        lines.slice(0, 15).map(function (v) {
          return { attrs: { data: { source: SRC.lines[v.li].key } }, cells: [el("span", { class: "pcref", text: shortSource(SRC.lines[v.li].key), title: SRC.lines[v.li].key, onclick: function () { selectLine(v.li, true); } }),
            fmtInt(v.hit), fmtInt(v.latency), fmtStall(v.stall), fmtInt(v.idle)] };
        }), { id: "scope-lines" }));
      var cl = ISA.classes.map(function (c) { return { c: c, hit: 0, latency: 0, stall: 0 }; });
      for (r = 0; r < nIsa; r++) { var x = cl[ISA.cls[r]]; x.hit += agg.hit[r]; x.latency += agg.latency[r]; x.stall += agg.stall[r]; }
      cl = cl.filter(function (x) { return x.latency > 0; }).sort(function (a, b) { return b.stall - a.stall || b.latency - a.latency; });
      byClass.textContent = "";
      byClass.appendChild(table([{ label: "class" }, { label: "stall", num: 1, title: "instruction stall" }, { label: "share", num: 1 }, { label: "latency", num: 1 }, { label: "executions", num: 1 }],
        cl.map(function (x) {
          return { attrs: { data: { cls: x.c } }, cells: [el("span", null, el("span", { class: "swatch", style: { background: classColor(x.c) } }), x.c), fmtStall(x.stall), fmtStallPct(agg.tot.stall ? x.stall / agg.tot.stall : null), fmtInt(x.latency), fmtInt(x.hit)] };
        }), { id: "scope-classes" }));
    }
    function setRange(a, b) {
      a = Math.max(0, Math.min(nb - 1, Math.floor(a)));
      b = Math.max(a + 1, Math.min(nb, Math.ceil(b)));
      rng = [a, b];
      agg = aggregate(a, b);
      var c0 = a * SC.bin_cycles, c1 = Math.min(b * SC.bin_cycles, TL.t1 - TL.t0);
      rangeText.textContent = (a === 0 && b === nb ? "whole dispatch: " : "range: ") + cyclesText(c0, c1) + " of " + fmtInt(TL.t1 - TL.t0) + " (bins " + a + "–" + (b - 1) + ")";
      drawStrip();
      renderCards();
      renderHist();
      renderTables();
    }
    histBins.addEventListener("change", renderHist);
    histMetric.addEventListener("change", renderHist);
    metric.addEventListener("change", renderTables);
    var rt = null;
    window.addEventListener("resize", function () { clearTimeout(rt); rt = setTimeout(drawStrip, 100); });
    api.scope = { range: function () { return rng.slice(); }, set: setRange, bins: nb, binCycles: SC.bin_cycles, t0: SC.t0,
      totals: function () { return { hit: agg.tot.hit, latency: agg.tot.latency, stall: agg.tot.stall, idle: agg.tot.idle }; } };
    setRange(0, nb);
  }
