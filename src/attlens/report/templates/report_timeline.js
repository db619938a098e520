  // ------------------------------------------------------------------ timeline
  var TL = DATA.timeline;
  function decodeRle(r) {
    var starts = new Int32Array(r.start.length), lane = 0, acc = 0;
    for (var i = 0; i < r.start.length; i++) {
      while (lane + 1 < r.off.length && i >= r.off[lane + 1]) { lane++; acc = 0; }
      acc += r.start[i];
      starts[i] = acc;
    }
    return { off: r.off, start: starts, val: r.val };
  }
  var viewHooks = [];
  function renderTimeline() {
    var s = section("timeline");
    if (!TL.lanes || !TL.lanes.length) { s.appendChild(el("p", { class: "muted", text: "No wave to draw." })); return; }
    var layers = { state: decodeRle(TL.state), cls: decodeRle(TL.cls) };
    var nL = TL.lanes.length, nB = TL.bins, bc = TL.bin_cycles;
    var nSimd = {};
    TL.lanes.forEach(function (l) { nSimd[l.se + "/" + l.cu + "/" + l.simd] = 1; });
    nSimd = Object.keys(nSimd).length;
    s.appendChild(el("p", { class: "muted", text: nL + " lanes (SE / CU / SIMD / wave slot), " + fmtInt(TL.waves.index.length) + " waves over " + fmtInt(TL.t1 - TL.t0) +
      " cycles" + (TL.clock_mhz ? " (" + fmtNum((TL.t1 - TL.t0) / TL.clock_mhz, 1) + " µs)" : "") + "; downsampled to " + fmtInt(nB) + " bins of " + bc +
      " cycles, each showing its dominant state or class. " + (TL.aligned ? "SE clocks aligned with realtime.json." : "SE clocks not aligned: " + TL.clock_note) +
      " Wheel: zoom; drag: pan; double-click: reset; click a wave to show its instructions below." }));
    var mode = el("select", { id: "tl-mode" }, el("option", { value: "state", text: "colour by wave state" }), el("option", { value: "cls", text: "colour by instruction class" }));
    var range = el("span", { class: "muted", id: "tl-range" });
    var legend = el("div", { class: "legend", id: "tl-legend" });
    var view = { v0: 0, v1: nB };
    function zoomAt(f, center) {
      var span = view.v1 - view.v0, ns = Math.min(nB, Math.max(8, span * f));
      var c = center === undefined ? (view.v0 + view.v1) / 2 : center;
      var a = c - (c - view.v0) * ns / span;
      a = Math.max(0, Math.min(nB - ns, a));
      view.v0 = a; view.v1 = a + ns; draw();
    }
    function pan(frac) { var span = view.v1 - view.v0, a = Math.max(0, Math.min(nB - span, view.v0 + frac * span)); view.v0 = a; view.v1 = a + span; draw(); }
    s.appendChild(el("div", { class: "controls" }, mode,
      el("button", { id: "tl-zoom-in", text: "+", title: "zoom in", onclick: function () { zoomAt(0.5); } }),
      el("button", { id: "tl-zoom-out", text: "−", title: "zoom out", onclick: function () { zoomAt(2); } }),
      el("button", { text: "←", title: "pan left", onclick: function () { pan(-0.25); } }),
      el("button", { text: "→", title: "pan right", onclick: function () { pan(0.25); } }),
      el("button", { id: "tl-reset", text: "reset", onclick: function () { view.v0 = 0; view.v1 = nB; draw(); } }), range));
    s.appendChild(legend);
    var wrap = el("div", { class: "tl-wrap" });
    var canvas = el("canvas", { id: "tl-canvas", "aria-label": "wave timeline" });
    var occ = el("canvas", { id: "occ-canvas", "aria-label": "occupancy over time" });
    var PS = TL.occupancy.per_se, nSe = PS ? PS.se.length : 0;
    var occSe = el("canvas", { id: "occ-se-canvas", "aria-label": "occupancy per shader engine over time" });
    var tip = el("div", { id: "tl-tip" });
    wrap.appendChild(canvas); wrap.appendChild(occ); wrap.appendChild(occSe); wrap.appendChild(tip);
    s.appendChild(wrap);
    var theoText = A.occupancy.theoretical_waves_per_simd === null ? "(unknown)" : A.occupancy.theoretical_waves_per_simd;
    s.appendChild(el("div", { class: "legend", id: "occ-legend" }, "Occupancy over time (lower charts): mean waves per SIMD over the " + nSimd + " traced SIMDs, then per traced shader engine (SE) over its own traced SIMDs, stacked by wave state; dashed: theoretical " +
      theoText + " waves per SIMD. Same time axis as the lanes above (SE clocks " + (TL.aligned ? "aligned" : "not aligned") + ")."));

    var laneH = Math.max(3, Math.min(14, Math.floor(560 / nL))), gutter = 120, axisH = 22, occH = 120, seH = 54;
    var waveLane = TL.waves.lane, wb = TL.waves.begin, we = TL.waves.end;
    var laneWaves = [];  // per lane [first, last) into TL.waves arrays (sorted by lane, begin)
    for (var L = 0; L < nL; L++) laneWaves.push([0, 0]);
    for (var i = waveLane.length - 1; i >= 0; i--) laneWaves[waveLane[i]][0] = i;
    for (i = 0; i < waveLane.length; i++) laneWaves[waveLane[i]][1] = i + 1;

    function names() { return mode.value === "state" ? TL.state_names : TL.class_names; }
    function colors() { return names().map(function (n) { return mode.value === "state" ? STATE_COLORS[n] : classColor(n); }); }
    function buildLegend() {
      legend.textContent = "";
      names().forEach(function (n) {
        if (n === "EMPTY") return;
        legend.appendChild(el("span", null, el("span", { class: "swatch", style: { background: mode.value === "state" ? STATE_COLORS[n] : classColor(n) } }), n));
      });
    }
    function firstRun(lay, lane, b) {
      var lo = lay.off[lane], hi = lay.off[lane + 1] - 1;
      while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (lay.start[mid] <= b) lo = mid; else hi = mid - 1; }
      return lo;
    }
    function niceStep(raw) {
      var p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
      return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
    }
    function sizeCanvas(c, h) {
      var dpr = window.devicePixelRatio || 1, w = Math.max(300, wrap.clientWidth);
      c.style.height = h + "px";
      if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
      var ctx = c.getContext("2d");
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      return { ctx: ctx, w: w, h: h };
    }
    function draw() {
      var H1 = nL * laneH + axisH;
      var g = sizeCanvas(canvas, H1), ctx = g.ctx, plotW = g.w - gutter, scale = plotW / (view.v1 - view.v0);
      ctx.clearRect(0, 0, g.w, H1);
      ctx.fillStyle = "#f7f9fc"; ctx.fillRect(gutter, 0, plotW, nL * laneH);
      var lay = layers[mode.value], cols = colors(), drawn = 0;
      for (var ln = 0; ln < nL; ln++) {
        var y = ln * laneH, end = lay.off[ln + 1];
        if (end <= lay.off[ln]) continue;
        var k = firstRun(lay, ln, Math.floor(view.v0)), lastPx = -1;
        for (; k < end; k++) {
          var a = lay.start[k];
          if (a >= view.v1) break;
          var b = k + 1 < end ? lay.start[k + 1] : nB, v = lay.val[k];
          if (v < 0 || b <= view.v0) continue;
          var x0 = gutter + (Math.max(a, view.v0) - view.v0) * scale, x1 = gutter + (Math.min(b, view.v1) - view.v0) * scale;
          if (x1 - x0 < 1) { var px = Math.floor(x0); if (px === lastPx) continue; lastPx = px; x0 = px; x1 = px + 1; }
          else lastPx = Math.floor(x1);
          ctx.fillStyle = cols[v];
          ctx.fillRect(x0, y, x1 - x0, laneH - (laneH > 4 ? 1 : 0));
          drawn++;
        }
      }
      // wave boundaries when few enough are visible
      var c0 = view.v0 * bc, c1 = Math.min(view.v1 * bc, TL.t1 - TL.t0), visible = 0;
      for (var wi = 0; wi < wb.length; wi++) if (we[wi] > c0 && wb[wi] < c1) visible++;
      if (visible < 1500) {
        ctx.fillStyle = "rgba(20,26,38,0.55)";
        for (wi = 0; wi < wb.length; wi++) {
          if (we[wi] <= c0 || wb[wi] >= c1) continue;
          var xb = gutter + (wb[wi] / bc - view.v0) * scale;
          if (xb >= gutter) ctx.fillRect(xb, waveLane[wi] * laneH, 1, laneH - 1);
        }
      }
      // lane labels and SIMD separators
      ctx.fillStyle = "#ffffff"; ctx.fillRect(0, 0, gutter, H1);
      ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
      var prevKey = null;
      for (ln = 0; ln < nL; ln++) {
        var l = TL.lanes[ln], key = l.se + "/" + l.cu + "/" + l.simd;
        if (key !== prevKey) {
          ctx.fillStyle = "#c5ccd8"; ctx.fillRect(0, ln * laneH, g.w, 1);
          ctx.fillStyle = "#1d2330";
          ctx.fillText("SE" + l.se + " CU" + l.cu + " SIMD" + l.simd, 4, ln * laneH + Math.max(laneH, 10) / 2 + 1);
          prevKey = key;
        } else if (laneH >= 11) {
          ctx.fillStyle = "#8a94a6"; ctx.fillText("slot " + l.slot, 84, ln * laneH + laneH / 2 + 1);
        }
      }
      // axis
      var yA = nL * laneH, stepC = niceStep((c1 - c0) / Math.max(2, plotW / 110));
      ctx.fillStyle = "#1d2330"; ctx.fillRect(gutter, yA, plotW, 1);
      ctx.textBaseline = "top";
      for (var tc = Math.ceil(c0 / stepC) * stepC; tc <= c1; tc += stepC) {
        var xt = gutter + (tc / bc - view.v0) * scale;
        ctx.fillRect(xt, yA, 1, 4);
        ctx.fillText(TL.clock_mhz ? fmtNum(tc / TL.clock_mhz, tc / TL.clock_mhz < 10 ? 2 : 1) + " µs" : fmtCompact(tc), xt + 2, yA + 5);
      }
      ctx.fillText(TL.clock_mhz ? "time" : "cycles", 4, yA + 5);
      canvas.dataset.drawn = String(drawn);
      canvas.dataset.view = view.v0.toFixed(2) + "," + view.v1.toFixed(2);
      range.textContent = "cycles " + fmtInt(c0) + " – " + fmtInt(c1) + " of " + fmtInt(TL.t1 - TL.t0) + (TL.clock_mhz ? " (" + fmtNum((c1 - c0) / TL.clock_mhz, 2) + " µs shown)" : "");
      drawOcc();
      drawOccSe();
      viewHooks.forEach(function (f) { f(view.v0, view.v1); });
    }
    // stacked wave states of one series (arrays of hundredths of waves per bin, offset into them), one column per pixel
    function stackStates(ctx, series, offset, scale, x0, plotW, top, h, ymax) {
      var order = ["EXEC", "WAIT", "STALL", "IDLE"], span = view.v1 - view.v0;
      for (var x = 0; x < plotW; x++) {
        var b0 = view.v0 + x * span / plotW, b1 = view.v0 + (x + 1) * span / plotW;
        var lo = Math.floor(b0), hi = Math.max(lo + 1, Math.ceil(b1));
        if (lo >= nB) break;
        hi = Math.min(hi, nB);
        var acc = 0;
        for (var si = 0; si < order.length; si++) {
          var arr = series[order[si]], sum = 0;
          for (var b = lo; b < hi; b++) sum += arr[offset + b];
          var v = sum / (hi - lo) / scale;
          if (v > 0) {
            ctx.fillStyle = STATE_COLORS[order[si]];
            ctx.fillRect(x0 + x, top + h - (acc + v) / ymax * h, 1, v / ymax * h);
          }
          acc += v;
        }
      }
    }
    function drawOccSe() {
      if (!nSe) { occSe.style.display = "none"; return; }
      var H2 = nSe * seH + 4, g = sizeCanvas(occSe, H2), ctx = g.ctx, plotW = g.w - gutter, theo = A.occupancy.theoretical_waves_per_simd;
      ctx.clearRect(0, 0, g.w, H2);
      var peaks = [];
      for (var k = 0; k < nSe; k++) {
        var top = k * seH + 6, h = seH - 14, sc = PS.simds[k] * TL.occupancy.scale, off = k * nB, maxR = 0;
        for (var b = Math.floor(view.v0); b < Math.min(nB, Math.ceil(view.v1)); b++) {
          var r = PS.states.EXEC[off + b] + PS.states.WAIT[off + b] + PS.states.STALL[off + b] + PS.states.IDLE[off + b];
          if (r > maxR) maxR = r;
        }
        var ymax = Math.max(1, maxR / sc, theo || 0) * 1.1;
        stackStates(ctx, PS.states, off, sc, gutter, plotW, top, h, ymax);
        if (theo) {
          var yt = top + h - theo / ymax * h;
          ctx.strokeStyle = "#1d2330"; ctx.setLineDash([4, 4]); ctx.beginPath(); ctx.moveTo(gutter, yt); ctx.lineTo(g.w, yt); ctx.stroke(); ctx.setLineDash([]);
        }
        ctx.fillStyle = "#c5ccd8"; ctx.fillRect(0, top + h, g.w, 1);
        ctx.fillStyle = "#1d2330"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
        ctx.fillText("SE" + PS.se[k] + " (" + PS.simds[k] + " SIMD" + (PS.simds[k] === 1 ? "" : "s") + ")", 4, top + h / 2);
        ctx.fillText(fmtNum(ymax, 1), 96, top + 4);
        peaks.push(fmtNum(maxR / sc, 2));
      }
      occSe.dataset.peaks = peaks.join(",");
    }
    function drawOcc() {
      var g = sizeCanvas(occ, occH), ctx = g.ctx, plotW = g.w - gutter, O = TL.occupancy, sc = O.scale * nSimd;
      var top = 8, h = occH - 26;
      ctx.clearRect(0, 0, g.w, occH);
      var theo = A.occupancy.theoretical_waves_per_simd, maxR = 0, b;
      for (b = Math.floor(view.v0); b < Math.min(nB, Math.ceil(view.v1)); b++) maxR = Math.max(maxR, O.resident[b] / sc);
      var ymax = Math.max(1, maxR, theo || 0) * 1.1;
      stackStates(ctx, O.states, 0, sc, gutter, plotW, top, h, ymax);
      if (theo) {
        var yt = top + h - theo / ymax * h;
        ctx.strokeStyle = "#1d2330"; ctx.setLineDash([5, 4]); ctx.beginPath(); ctx.moveTo(gutter, yt); ctx.lineTo(g.w, yt); ctx.stroke(); ctx.setLineDash([]);
      }
      ctx.fillStyle = "#1d2330"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
      ctx.fillText("all traced SIMDs", 4, top + 8);
      ctx.fillText("waves / SIMD", 4, top + 22);
      ctx.fillText(fmtNum(ymax, 1), 84, top + 2);
      ctx.fillText("0", 104, top + h);
      ctx.fillRect(gutter, top + h, plotW, 1);
    }
    function laneAt(ev) {
      var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
      var plotW = r.width - gutter;
      if (x < gutter || y >= nL * laneH || y < 0) return null;
      return { lane: Math.floor(y / laneH), bin: view.v0 + (x - gutter) / plotW * (view.v1 - view.v0), x: x, y: y };
    }
    var drag = null;
    canvas.addEventListener("wheel", function (ev) {
      var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left;
      if (x < gutter) return;
      ev.preventDefault();
      zoomAt(ev.deltaY > 0 ? 1.25 : 0.8, view.v0 + (x - gutter) / (r.width - gutter) * (view.v1 - view.v0));
    }, { passive: false });
    canvas.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, v0: view.v0, v1: view.v1, moved: false }; canvas.classList.add("dragging"); });
    window.addEventListener("mouseup", function (ev) {
      var click = drag && !drag.moved && ev.target === canvas;
      drag = null; canvas.classList.remove("dragging");
      if (click) pickAt(ev);
    });
    function waveAt(p) {
      // index into TL.waves of the wave resident on lane p.lane at the pointer's cycle
      var cyc = p.bin * bc, lw = laneWaves[p.lane];
      for (var wi = lw[0]; wi < lw[1]; wi++) if (wb[wi] <= cyc && cyc < we[wi]) return wi;
      return -1;
    }
    function pickAt(ev) {
      var p = laneAt(ev);
      if (!p) return;
      var wi = waveAt(p);
      if (wi >= 0 && api.pickWave) api.pickWave(TL.waves.index[wi], true);
    }
    canvas.addEventListener("dblclick", function () { view.v0 = 0; view.v1 = nB; draw(); });
    canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    canvas.addEventListener("mousemove", function (ev) {
      if (drag && Math.abs(ev.clientX - drag.x) > 3) drag.moved = true;
      if (drag && drag.moved) {
        var r = canvas.getBoundingClientRect(), span = drag.v1 - drag.v0;
        var d = (ev.clientX - drag.x) / (r.width - gutter) * span;
        var a = Math.max(0, Math.min(nB - span, drag.v0 - d));
        view.v0 = a; view.v1 = a + span; draw();
        return;
      }
      var p = laneAt(ev);
      if (!p) { tip.style.display = "none"; return; }
      var l = TL.lanes[p.lane], lay = layers[mode.value], k = firstRun(lay, p.lane, Math.floor(p.bin));
      var v = k < lay.off[p.lane + 1] ? lay.val[k] : -1, cyc = Math.floor(p.bin * bc);
      var lines = ["SE" + l.se + " CU" + l.cu + " SIMD" + l.simd + " slot " + l.slot, "cycle " + fmtInt(cyc) + (TL.clock_mhz ? " (" + fmtNum(cyc / TL.clock_mhz, 2) + " µs)" : "") + ": " + (v < 0 ? "no wave" : names()[v])];
      var wi = waveAt(p);
      if (wi >= 0) {
        var S4 = TL.waves.states, stt = [S4[4 * wi], S4[4 * wi + 1], S4[4 * wi + 2], S4[4 * wi + 3]], tot = stt[0] + stt[1] + stt[2] + stt[3] || 1;
        lines.push("wave #" + TL.waves.index[wi] + ": cycles " + fmtInt(wb[wi]) + " – " + fmtInt(we[wi]) + ", " + fmtInt(TL.waves.records[wi]) + " records");
        lines.push("wave states: EXEC " + fmtPct(stt[1] / tot) + "  WAIT " + fmtPct(stt[2] / tot) + "  STALL " + fmtPct(stt[3] / tot) + "  IDLE " + fmtPct(stt[0] / tot));
        lines.push("click: show this wave's instructions");
      }
      tip.textContent = lines.join("\n");
      tip.style.display = "block";
      var wr = wrap.getBoundingClientRect();
      tip.style.left = Math.min(p.x + 14, wr.width - 330) + "px";
      tip.style.top = (p.y + 14) + "px";
    });
    mode.addEventListener("change", function () { buildLegend(); draw(); });
    var rt = null;
    window.addEventListener("resize", function () { clearTimeout(rt); rt = setTimeout(draw, 100); });
    buildLegend();
    draw();
    api.timeline = { view: function () { return [view.v0, view.v1]; }, zoom: function (a, b) { view.v0 = Math.max(0, a); view.v1 = Math.min(nB, b); draw(); }, draw: draw,
      onView: function (f) { viewHooks.push(f); },
      pointOf: function (wave) {
        // where wave's middle is drawn, in window coordinates (null when out of view)
        var k = Array.prototype.indexOf.call(TL.waves.index, wave);
        if (k < 0) return null;
        var r = canvas.getBoundingClientRect(), mid = (wb[k] + we[k]) / 2 / bc;
        if (mid < view.v0 || mid > view.v1) return null;
        return { x: r.left + gutter + (mid - view.v0) / (view.v1 - view.v0) * (r.width - gutter), y: r.top + waveLane[k] * laneH + laneH / 2 };
      },
      laneOf: function (wave) { var k = Array.prototype.indexOf.call(TL.waves.index, wave); return k < 0 ? null : TL.lanes[waveLane[k]]; } };
  }


  // ------------------------------------------------------------------ one wave: instruction timeline
  // The records of the waves in DATA.wave_detail (all waves up to its limit,
  // else a spread of them): each execution is a bar from its first issue
  // attempt to its end (time + duration) in its class's colour; the part
  // before issue (its instruction stall) is pale with a red top edge. Below,
  // the same wave's wave-state row. Executions that overlap (a memory op
  // still running when the next one issues) go to the next of four sub-rows.
  var WD = DATA.wave_detail;
  function decodeWave(cols) {
    var step = cols[0], gap = cols[1], issue = cols[2], stall = cols[3], n = step.length;
    var pc = new Int32Array(n), time = new Float64Array(n), dur = new Float64Array(n), t = 0, p = 0;
    for (var k = 0; k < n; k++) {
      p += step[k];
      t += gap[k] + (k ? dur[k - 1] : 0);
      pc[k] = p; time[k] = t; dur[k] = issue[k] + stall[k];
    }
    var nS = cols[4].length, sStart = new Float64Array(nS), acc = 0;
    for (k = 0; k < nS; k++) { sStart[k] = acc; acc += cols[5][k]; }
    return { pc: pc, time: time, duration: dur, stall: stall, state: cols[4], stateStart: sStart, stateCycles: cols[5] };
  }
  function renderWave() {
    var s = section("wave");
    if (!WD || !WD.waves.length || !TL.lanes || !TL.lanes.length) { s.appendChild(el("p", { class: "muted", text: "No instruction records to draw." })); return; }
    var posOf = {};
    for (var k = 0; k < TL.waves.index.length; k++) posOf[TL.waves.index[k]] = k;
    var detail = {};
    WD.waves.forEach(function (w, j) { detail[w] = j; });
    var byBegin = WD.waves.slice().sort(function (a, b) { return TL.waves.begin[posOf[a]] - TL.waves.begin[posOf[b]] || a - b; });
    var lifeOf = function (w) { return TL.waves.end[posOf[w]] - TL.waves.begin[posOf[w]]; };
    var longest = byBegin.reduce(function (m, w) { return lifeOf(w) > lifeOf(m) ? w : m; }, byBegin[0]);
    var shortest = byBegin.reduce(function (m, w) { return lifeOf(w) < lifeOf(m) ? w : m; }, byBegin[0]);
    var nAll = TL.waves.index.length;
    s.appendChild(el("p", { class: "muted", text: "Every instruction execution of one wave, from its first issue attempt to its end, coloured by class; the pale part with a red top edge is its instruction stall (waiting to issue). Below: the wave's states (EXEC / WAIT / STALL / IDLE). " +
      (WD.waves.length === nAll ? "All " + fmtInt(nAll) + " traced waves can be picked." : "Records are embedded for " + fmtInt(WD.waves.length) + " of the " + fmtInt(nAll) + " traced waves (" + WD.limit + " at most, spread over the dispatch by start time, plus the longest and the shortest) to keep the file small; clicking another wave in the timeline above picks the nearest embedded one on its lane.") +
      " Wheel: zoom; drag: pan; click an instruction to select it in the ISA view." }));
    var pick = el("select", { id: "wave-pick", "aria-label": "wave" });
    byBegin.forEach(function (w) {
      var q = posOf[w], l = TL.lanes[TL.waves.lane[q]];
      pick.appendChild(el("option", { value: w, text: "wave #" + w + " · SE" + l.se + " CU" + l.cu + " SIMD" + l.simd + " slot " + l.slot + " · cycles " + fmtInt(TL.waves.begin[q]) + " – " + fmtInt(TL.waves.end[q]) +
        " · " + fmtInt(TL.waves.records[q]) + " records" + (w === longest ? " · longest" : w === shortest ? " · shortest" : "") }));
    });
    var note = el("span", { class: "muted", id: "wave-note" }), range = el("span", { class: "muted", id: "wave-range" });
    var view = { v0: 0, v1: 1 }, cur = null, cache = {};
    function zoomAt(f, c) {
      var life = cur.life, span = view.v1 - view.v0, ns = Math.min(life, Math.max(16, span * f));
      c = c === undefined ? (view.v0 + view.v1) / 2 : c;
      var a = Math.max(0, Math.min(life - ns, c - (c - view.v0) * ns / span));
      view.v0 = a; view.v1 = a + ns; draw();
    }
    s.appendChild(el("div", { class: "controls" }, el("label", null, "wave ", pick),
      el("button", { id: "wave-zoom-in", text: "+", title: "zoom in", onclick: function () { zoomAt(0.5); } }),
      el("button", { text: "−", title: "zoom out", onclick: function () { zoomAt(2); } }),
      el("button", { id: "wave-reset", text: "reset", onclick: function () { view.v0 = 0; view.v1 = cur.life; draw(); } }), range, note));
    var legend = el("div", { class: "legend", id: "wave-legend" });
    s.appendChild(legend);
    var wrap = el("div", { class: "tl-wrap" }), canvas = el("canvas", { id: "wave-canvas", "aria-label": "instruction timeline of one wave" }), tip = el("div", { class: "tip", id: "wave-tip" });
    wrap.appendChild(canvas); wrap.appendChild(tip);
    s.appendChild(wrap);

    var gutter = 120, subH = 22, subRows = 1, stateH = 14, axisH = 22, MAX_SUB = 4;
    function clsOf(pc) { var r = rowOfPc[pc]; return r === undefined ? "other" : ISA.classes[ISA.cls[r]]; }
    function layoutRows(d) {
      // one row, unless executions overlap (then up to MAX_SUB rows)
      var lane = new Int8Array(d.pc.length), ends = [-1, -1, -1, -1], used = 1;
      for (var k = 0; k < d.pc.length; k++) {
        var l = 0;
        while (l < MAX_SUB - 1 && ends[l] > d.time[k]) l++;
        lane[k] = l;
        used = Math.max(used, l + 1);
        ends[l] = Math.max(ends[l], d.time[k] + d.duration[k]);
      }
      subRows = used;
      return lane;
    }
    function buildLegend(d) {
      legend.textContent = "";
      var seen = {};
      for (var k = 0; k < d.pc.length; k++) seen[clsOf(d.pc[k])] = 1;
      Object.keys(seen).sort().forEach(function (c) { legend.appendChild(el("span", null, el("span", { class: "swatch", style: { background: classColor(c) } }), c)); });
      legend.appendChild(el("span", null, el("span", { class: "swatch stall-swatch" }), "instruction stall (before issue)"));
      ["EXEC", "WAIT", "STALL", "IDLE"].forEach(function (n) { legend.appendChild(el("span", null, el("span", { class: "swatch", style: { background: STATE_COLORS[n] } }), n + " (wave state)")); });
    }
    function sizeCanvas(h) {
      var dpr = window.devicePixelRatio || 1, w = Math.max(300, wrap.clientWidth);
      canvas.style.height = h + "px";
      if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr); }
      var ctx = canvas.getContext("2d");
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      return { ctx: ctx, w: w };
    }
    function draw() {
      if (!cur) return;
      var d = cur.d, H1 = subRows * subH + 6 + stateH + axisH, g = sizeCanvas(H1), ctx = g.ctx, plotW = g.w - gutter, sc = plotW / (view.v1 - view.v0);
      ctx.clearRect(0, 0, g.w, H1);
      ctx.fillStyle = "#f7f9fc"; ctx.fillRect(gutter, 0, plotW, subRows * subH);
      var lastPx = [-1, -1, -1, -1], drawn = 0, stalled = 0, sel = state.pc;
      for (var k = 0; k < d.pc.length; k++) {
        var t0 = d.time[k], t1 = t0 + d.duration[k];
        if (t1 < view.v0 || t0 > view.v1) continue;
        var x0 = gutter + (Math.max(t0, view.v0) - view.v0) * sc, x1 = gutter + (Math.min(t1, view.v1) - view.v0) * sc, y = cur.lane[k] * subH;
        if (x1 - x0 < 1) { var px = Math.floor(x0); if (px === lastPx[cur.lane[k]]) continue; lastPx[cur.lane[k]] = px; x0 = px; x1 = px + 1; }
        else lastPx[cur.lane[k]] = Math.floor(x1);
        var col = classColor(clsOf(d.pc[k])), xs = gutter + (Math.min(Math.max(t0 + d.stall[k], view.v0), view.v1) - view.v0) * sc;
        if (d.stall[k] > 0 && xs > x0) {
          ctx.globalAlpha = 0.35; ctx.fillStyle = col; ctx.fillRect(x0, y + 1, xs - x0, subH - 2); ctx.globalAlpha = 1;
          ctx.fillStyle = STATE_COLORS.STALL; ctx.fillRect(x0, y + 1, xs - x0, 3);
          stalled++;
        }
        if (x1 > xs) { ctx.fillStyle = col; ctx.fillRect(Math.max(xs, x0), y + 1, x1 - Math.max(xs, x0), subH - 2); }
        if (sel !== null && d.pc[k] === sel) { ctx.strokeStyle = "#111"; ctx.lineWidth = 1.5; ctx.strokeRect(x0 - 1, y, Math.max(2, x1 - x0) + 2, subH); }
        drawn++;
      }
      var yS = subRows * subH + 6, lastS = -1;
      for (k = 0; k < d.state.length; k++) {
        var a = d.stateStart[k], b = a + d.stateCycles[k];
        if (b < view.v0 || a > view.v1) continue;
        var sx0 = gutter + (Math.max(a, view.v0) - view.v0) * sc, sx1 = gutter + (Math.min(b, view.v1) - view.v0) * sc;
        if (sx1 - sx0 < 1) { if (Math.floor(sx0) === lastS) continue; sx0 = Math.floor(sx0); sx1 = sx0 + 1; }
        lastS = Math.floor(sx1);
        ctx.fillStyle = STATE_COLORS[TL.state_names[d.state[k]]] || "#ccc";
        ctx.fillRect(sx0, yS, sx1 - sx0, stateH);
      }
      ctx.fillStyle = "#ffffff"; ctx.fillRect(0, 0, gutter, H1);
      ctx.fillStyle = "#1d2330"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
      ctx.fillText("instructions", 4, subH / 2 + 1);
      if (subRows > 1) { ctx.fillStyle = "#8a94a6"; ctx.fillText("(overlaps below)", 4, subH * 1.5 + 1); }
      ctx.fillStyle = "#1d2330"; ctx.fillText("wave state", 4, yS + stateH / 2);
      var yA = yS + stateH + 2, span = view.v1 - view.v0, raw = span / Math.max(2, plotW / 110), p10 = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p10;
      var stepC = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p10;
      ctx.fillRect(gutter, yA, plotW, 1);
      ctx.textBaseline = "top";
      for (var tc = Math.ceil(view.v0 / stepC) * stepC; tc <= view.v1; tc += stepC) {
        var xt = gutter + (tc - view.v0) * sc;
        ctx.fillRect(xt, yA, 1, 4);
        ctx.fillText("+" + fmtCompact(tc), xt + 2, yA + 5);
      }
      ctx.fillText("cycles from begin", 4, yA + 5);
      canvas.dataset.wave = String(cur.wave);
      canvas.dataset.drawn = String(drawn);
      canvas.dataset.stalled = String(stalled);
      range.textContent = "cycles +" + fmtInt(view.v0) + " – +" + fmtInt(view.v1) + " of " + fmtInt(cur.life) + " (" + fmtInt(d.pc.length) + " executions)";
    }
    function show(w, d) {
      var q = posOf[w];
      cur = { wave: w, d: d, lane: layoutRows(d), life: Math.max(1, TL.waves.end[q] - TL.waves.begin[q]) };
      view.v0 = 0; view.v1 = cur.life;
      buildLegend(d);
      draw();
    }
    function nearestDetail(w) {
      var q = posOf[w], lane = TL.waves.lane[q], b = TL.waves.begin[q], best = null, bestD = Infinity;
      WD.waves.forEach(function (x) {
        var r = posOf[x], dd = Math.abs(TL.waves.begin[r] - b) + (TL.waves.lane[r] === lane ? 0 : 1e15);
        if (dd < bestD) { bestD = dd; best = x; }
      });
      return best;
    }
    function pickWave(w, scroll) {
      w = Number(w);
      var want = w;
      if (detail[w] === undefined) w = nearestDetail(w);
      note.textContent = want !== w ? "wave #" + want + " has no embedded records; showing wave #" + w + ", the nearest embedded one" + (TL.waves.lane[posOf[w]] === TL.waves.lane[posOf[want]] ? " on its lane." : ".") : "";
      pick.value = String(w);
      if (scroll) s.scrollIntoView({ block: "start" });
      var p = cache[w] ? Promise.resolve(cache[w]) : unpack(WD.blob[detail[w]]).then(function (cols) { cache[w] = decodeWave(cols); return cache[w]; });
      return p.then(function (d) { show(w, d); return w; });
    }
    pick.addEventListener("change", function () { pickWave(pick.value, false); });
    var drag = null;
    canvas.addEventListener("wheel", function (ev) {
      if (!cur) return;
      var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left;
      if (x < gutter) return;
      ev.preventDefault();
      zoomAt(ev.deltaY > 0 ? 1.25 : 0.8, view.v0 + (x - gutter) / (r.width - gutter) * (view.v1 - view.v0));
    }, { passive: false });
    function recordAt(ev) {
      var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
      if (!cur || x < gutter || y < 0 || y >= subRows * subH) return -1;
      var t = view.v0 + (x - gutter) / (r.width - gutter) * (view.v1 - view.v0), sub = Math.floor(y / subH), d = cur.d, tol = 2 * (view.v1 - view.v0) / (r.width - gutter);
      for (var k = 0; k < d.pc.length; k++) if (cur.lane[k] === sub && d.time[k] - tol <= t && t < d.time[k] + d.duration[k] + tol) return k;
      return -1;
    }
    canvas.addEventListener("mousedown", function (ev) { if (cur) drag = { x: ev.clientX, v0: view.v0, v1: view.v1, moved: false }; });
    window.addEventListener("mouseup", function (ev) {
      var click = drag && !drag.moved && ev.target === canvas;
      drag = null;
      if (click) { var k = recordAt(ev); if (k >= 0) selectPc(cur.d.pc[k], true); }
    });
    canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    canvas.addEventListener("mousemove", function (ev) {
      if (drag && Math.abs(ev.clientX - drag.x) > 3) drag.moved = true;
      if (drag && drag.moved) {
        var r = canvas.getBoundingClientRect(), span = drag.v1 - drag.v0, dd = (ev.clientX - drag.x) / (r.width - gutter) * span;
        var a = Math.max(0, Math.min(cur.life - span, drag.v0 - dd));
        view.v0 = a; view.v1 = a + span; draw();
        return;
      }
      var k = recordAt(ev);
      if (k < 0) { tip.style.display = "none"; return; }
      var d = cur.d, pc = d.pc[k];
      tip.textContent = ["pc " + pc + "  " + isaText(pc), clsOf(pc) + " · cycle +" + fmtInt(d.time[k]) + " · instruction stall " + fmtInt(d.stall[k]) + " · duration " + fmtInt(d.duration[k]),
        "execution " + (k + 1) + " of " + fmtInt(d.pc.length) + " · click: select in the ISA view"].join("\n");
      tip.style.display = "block";
      var wr = wrap.getBoundingClientRect(), cr = canvas.getBoundingClientRect();
      tip.style.left = Math.min(ev.clientX - cr.left + 14, wr.width - 360) + "px";
      tip.style.top = (ev.clientY - cr.top + 14) + "px";
    });
    selectionHooks.push(function () { draw(); });
    var rt = null;
    window.addEventListener("resize", function () { clearTimeout(rt); rt = setTimeout(draw, 100); });
    api.pickWave = pickWave;
    api.wave = {
      pick: pickWave,
      current: function () { return cur ? cur.wave : null; },
      records: function () {
        if (!cur) return null;
        var d = cur.d;
        return { pc: Array.from(d.pc), time: Array.from(d.time), duration: Array.from(d.duration), stall: Array.from(d.stall), lane: Array.from(cur.lane) };
      },
      view: function () { return [view.v0, view.v1]; }
    };
    // a typical wave first: the one whose lifetime is the median of the embedded ones
    var byLife = WD.waves.slice().sort(function (a, b) { return lifeOf(a) - lifeOf(b) || a - b; });
    return pickWave(byLife[Math.floor((byLife.length - 1) / 2)], false);
  }
