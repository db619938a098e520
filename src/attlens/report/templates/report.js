/* attlens HTML report. Plain JavaScript, no library, no network.
   Every string from the trace is put in the page with textContent (or as an
   SVG/canvas text), never parsed as HTML. */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("attlens-data").textContent);
  var A = DATA.analysis, P = DATA.plan, W = DATA.waves, H = DATA.headline;
  var SVGNS = "http://www.w3.org/2000/svg";

  // ------------------------------------------------------------------ helpers
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k)) continue;
        var v = attrs[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = String(v);
        else if (k === "data") { for (var d in v) e.dataset[d] = String(v[d]); }
        else if (k === "style") { for (var s in v) e.style[s] = v[s]; }
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, String(v));
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(parent, c) {
    if (c === null || c === undefined || c === false) return parent;
    if (Array.isArray(c)) { c.forEach(function (x) { add(parent, x); }); return parent; }
    if (typeof c === "string" || typeof c === "number") parent.appendChild(document.createTextNode(String(c)));
    else parent.appendChild(c);
    return parent;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function fmtInt(n) {
    if (n === null || n === undefined) return "n/a";
    var s = String(Math.round(n)), neg = s.charAt(0) === "-";
    if (neg) s = s.slice(1);
    s = s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return neg ? "-" + s : s;
  }
  function fmtPct(x, nd) {
    if (x === null || x === undefined) return "n/a";
    return (100 * x).toFixed(nd === undefined ? 1 : nd) + "%";
  }
  function fmtNum(x, nd) {
    if (x === null || x === undefined) return "n/a";
    return Number(x).toFixed(nd === undefined ? 1 : nd);
  }
  function fmtCompact(n) {
    if (n === null || n === undefined) return "n/a";
    var a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(a >= 1e10 ? 0 : 1) + "G";
    if (a >= 1e6) return (n / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
    if (a >= 1e4) return (n / 1e3).toFixed(a >= 1e5 ? 0 : 1) + "k";
    return fmtInt(n);
  }
  function fmtBytes(b) {
    if (b === null || b === undefined) return "n/a";
    return (b / 1048576).toFixed(2) + " MiB";
  }
  function shortSource(src) {
    if (!src) return "-";
    var i = src.lastIndexOf(":"), f = i > 0 ? src.slice(0, i) : src, ln = i > 0 ? src.slice(i) : "";
    var j = f.lastIndexOf("/");
    return (j >= 0 ? f.slice(j + 1) : f) + ln;
  }
  function section(id) { return document.getElementById(id); }
  function guard(name, fn) {
    try { fn(); } catch (err) {
      console.error("attlens report: " + name + " failed", err);
      var s = section(name);
      if (s) add(s, el("p", { class: "warn", text: "This part of the report could not be drawn: " + err }));
    }
  }
  function table(cols, rows, opts) {
    // cols: [{label, num, cls}], rows: arrays of cell contents
    var t = el("table", { class: "data" + (opts && opts.cls ? " " + opts.cls : ""), id: opts && opts.id });
    var tr = el("tr");
    cols.forEach(function (c) { tr.appendChild(el("th", { class: c.num ? "num" : null, text: c.label, title: c.title })); });
    t.appendChild(el("thead", null, tr));
    var tb = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr", r.attrs || null);
      (r.cells || r).forEach(function (v, i) {
        var td = el("td", { class: cols[i] && cols[i].num ? "num" : null });
        add(td, v);
        row.appendChild(td);
      });
      tb.appendChild(row);
    });
    t.appendChild(tb);
    return t;
  }
  function scrollWithin(container, elem) {
    var c = container.getBoundingClientRect(), r = elem.getBoundingClientRect();
    var sticky = container.querySelector("thead") ? 26 : 24;
    if (r.top < c.top + sticky || r.bottom > c.bottom) {
      container.scrollTop += r.top - c.top - Math.max(40, container.clientHeight / 3);
    }
  }

  var STATE_COLORS = { EMPTY: "#ffffff", IDLE: "#b8c0cc", EXEC: "#2e9e5b", WAIT: "#e0a526", STALL: "#d64545" };
  var CLASS_COLORS = {
    wait_global: "#d64545", wait_lds: "#f08c2e", wait_smem: "#c9a227", wait_unresolved: "#a47474",
    barrier: "#8e44ad", vmem_load: "#1f77b4", vmem_store: "#5aa9e0", vmem_atomic: "#17becf",
    lds: "#2ca02c", lds_crosslane: "#98d27a", mfma: "#e377c2", valu: "#3949ab", salu: "#8c8c8c",
    smem: "#bcbd22", branch: "#8c564b", hazard: "#cfcfcf", message: "#aec7e8", kernel_end: "#505050",
    other: "#9e9e9e", wait: "#e57373"
  };
  function classColor(c) { return CLASS_COLORS[c] || "#9e9e9e"; }
  var CLASS_DESC = {};
  (A.stall_by_class || []).forEach(function (r) { CLASS_DESC[r.class] = r.description; });

  // ------------------------------------------------------------------ header
  function renderHeader() {
    var s = section("header"), c = A.capture, t = A.target, q = A.quality;
    s.appendChild(el("h1", { id: "kernel-name", text: c.kernel || "(unnamed kernel)" }));
    var tgt = t.name ? t.name + (t.family ? " (" + t.family + (t.product ? ", " + t.product : "") + ")" : "") : "unknown";
    var facts = [
      ["target", tgt + " — from " + t.source + ": " + (t.reason || "")],
      ["capture", c.path],
      ["dispatch", (c.dispatch_id === null ? "n/a" : String(c.dispatch_id)) + " (agent handle " + (c.agent_handle === null ? "n/a" : c.agent_handle) + ")"],
      ["waves", fmtInt(c.waves) + " traced" + (c.waves_listed !== c.waves ? " of " + fmtInt(c.waves_listed) + " listed" : "") + "; " + fmtInt(c.records) + " instruction records"],
      ["traced", "CU " + c.cus.join(",") + " of SE " + c.shader_engines.join(",") + ", SIMD " + c.simds.join(",")],
      ["shader clock", c.shader_clock_mhz ? fmtInt(c.shader_clock_mhz) + " MHz (realtime.json); " + W.clock.note : W.clock.note],
      ["source lines", q.has_source_lines ? fmtPct(q.mapped_latency_share) + " of cycles on instructions with a source line" : "none (kernel built without line info)"],
      ["instructions", fmtInt(A.instructions.listed) + " listed, " + fmtInt(A.instructions.executed) + " executed, " + fmtInt(A.instructions.never_executed) + " never executed"],
      ["code.json", q.code_json_consistent ? "sums equal the wave files" : "sums differ from the wave files (attlens reports the wave-file sums)"],
      ["decoder", (c.decoder_version || "n/a") + (c.gfxip !== null ? ", gfxip " + c.gfxip : "")]
    ];
    var pcs = A.pc_sampling;
    if (pcs) {
      var jn = pcs.join, sm = pcs.samples;
      facts.push(["PC samples", jn.mode === "none" ? "not joined: " + jn.reason :
        fmtInt(sm.joined) + " of " + fmtInt(sm.in_file) + " joined (" + jn.mode + ", scope " + jn.scope + ", confidence " + jn.confidence.toFixed(2) + ")" +
        (pcs.stalled ? "; stalled: " + reasonMix(Object.keys(pcs.reasons).map(function (k) { return [k, pcs.reasons[k]]; }), pcs.stalled) : "")]);
    }
    var dl = el("dl", { class: "facts", id: "capture-facts" });
    facts.forEach(function (f) { dl.appendChild(el("dt", { text: f[0] })); dl.appendChild(el("dd", { text: f[1] })); });
    s.appendChild(dl);
    var warnings = [];
    P.findings.forEach(function (f) { if (f.kind === "capture") warnings.push(f.severity + " " + f.title + " [" + f.rule + "]"); });
    (A.warnings || []).forEach(function (w) { warnings.push(w); });
    (W.flags || []).forEach(function (w) { warnings.push(w); });
    if (warnings.length) {
      var ul = el("ul", { class: "warnings", id: "warnings" });
      warnings.forEach(function (w) { ul.appendChild(el("li", { text: w })); });
      s.appendChild(el("h3", { text: "Warnings" }));
      s.appendChild(ul);
    }
  }

  // ------------------------------------------------------------------ headline
  function card(id, value, label, title) {
    return el("div", { class: "card", title: title }, el("div", { class: "v", id: id, text: value }), el("div", { class: "l", text: label }));
  }
  function renderHeadline() {
    var s = section("headline"), T = A.totals;
    var cards = el("div", { class: "cards" });
    add(cards, [
      card("hl-total-cycles", fmtInt(H.total_cycles), "total cycles (latency + idle, all traced waves)"),
      card("hl-latency", fmtInt(T.latency), "latency cycles"),
      card("hl-stall", fmtInt(T.stall), "stall cycles"),
      card("hl-stall-share", fmtPct(T.stall_share_of_latency), "stall share of latency"),
      card("hl-idle", fmtInt(T.idle), "idle cycles"),
      card("hl-issue", fmtInt(T.issue), "issue cycles (latency − stall)")
    ]);
    if (A.latency_hiding) cards.appendChild(card("hl-hidden", fmtPct(A.latency_hiding.hidden_share), "hidden by other waves' work"));
    s.appendChild(cards);

    var grid = el("div", { class: "grid2" });
    var left = el("div"), right = el("div");
    grid.appendChild(left); grid.appendChild(right);
    s.appendChild(grid);

    // stall by class: SVG bar chart + table
    left.appendChild(el("h3", { text: "Stall by class" }));
    var rows = (A.stall_by_class || []).filter(function (r) { return r.stall > 0; });
    var maxS = rows.reduce(function (m, r) { return Math.max(m, r.stall); }, 1);
    var bh = 20, lw = 130, vw = 170, cw = 560, ch = rows.length * bh + 6;
    var chart = svg("svg", { id: "stall-chart", viewBox: "0 0 " + cw + " " + ch, width: "100%", role: "img", "aria-label": "stall cycles by class" });
    chart.style.maxWidth = cw + "px";
    rows.forEach(function (r, i) {
      var y = 3 + i * bh, w = Math.max(1, (cw - lw - vw) * r.stall / maxS);
      var g = svg("g", {});
      g.appendChild(svg("title", {}, r.class + ": " + r.description));
      g.appendChild(svg("text", { x: lw - 6, y: y + 14, "text-anchor": "end" }, r.class));
      g.appendChild(svg("rect", { x: lw, y: y + 3, width: w, height: bh - 6, fill: classColor(r.class), rx: 2 }));
      g.appendChild(svg("text", { x: lw + w + 6, y: y + 14 }, fmtCompact(r.stall) + "  " + fmtPct(r.stall_share)));
      chart.appendChild(g);
    });
    if (!rows.length) left.appendChild(el("p", { class: "muted", text: "No stall cycles." }));
    else left.appendChild(chart);
    left.appendChild(table(
      [{ label: "class" }, { label: "stall", num: 1 }, { label: "share", num: 1 }, { label: "latency", num: 1 }, { label: "latency share", num: 1 }, { label: "records", num: 1 }],
      (A.stall_by_class || []).map(function (r) {
        return { attrs: { data: { cls: r.class }, title: r.description }, cells: [
          el("span", null, el("span", { class: "swatch", style: { background: classColor(r.class) } }), r.class),
          fmtInt(r.stall), fmtPct(r.stall_share), fmtInt(r.latency), fmtPct(r.latency_share), fmtInt(r.records)] };
      }), { id: "stall-by-class" }));

    // wave states
    right.appendChild(el("h3", { text: "Wave states (all traced waves, weighted by lifetime)" }));
    var st = W.states, names = ["EXEC", "WAIT", "STALL", "IDLE"];
    var bar = el("div", { class: "hbar", id: "state-bar" });
    names.forEach(function (n) {
      var sh = st.share[n] || 0;
      if (sh > 0) bar.appendChild(el("div", { title: n + " " + fmtPct(sh), style: { width: (100 * sh) + "%", background: STATE_COLORS[n] } }));
    });
    right.appendChild(bar);
    right.appendChild(table([{ label: "state" }, { label: "cycles", num: 1 }, { label: "share", num: 1 }],
      names.map(function (n) {
        return { attrs: { data: { state: n } }, cells: [el("span", null, el("span", { class: "swatch", style: { background: STATE_COLORS[n] } }), n), fmtInt(st.cycles[n]), fmtPct(st.share[n])] };
      }), { id: "wave-states" }));

    // occupancy
    var o = A.occupancy;
    right.appendChild(el("h3", { text: "Occupancy (waves per SIMD)" }));
    var oc = el("div", { class: "cards" });
    add(oc, [
      card("hl-occ-theoretical", o.theoretical_waves_per_simd === null ? "n/a" : String(o.theoretical_waves_per_simd), "theoretical" + (o.limiters && o.limiters.length ? ", limited by " + o.limiters.join(", ") : "")),
      card("hl-occ-observed", o.observed_max_waves_per_simd_traced_cu === null ? "n/a" : String(o.observed_max_waves_per_simd_traced_cu), "observed peak, traced CU" + (o.observed_mean_peak_waves_per_simd_traced_cu !== null ? " (mean peak " + fmtNum(o.observed_mean_peak_waves_per_simd_traced_cu, 2) + ")" : "")),
      card("hl-occ-all", o.observed_max_waves_per_simd_all_cus === null ? "n/a" : String(o.observed_max_waves_per_simd_all_cus), "observed peak, all CUs of the traced SEs")
    ]);
    right.appendChild(oc);
    var lim = el("span", { id: "hl-occ-limiters", text: (o.limiters || []).join(", ") || "n/a" });
    right.appendChild(el("div", null, "Limiter: ", lim));
    if (!o.available && o.reason) right.appendChild(el("p", { class: "muted", text: "Theoretical occupancy unavailable: " + o.reason }));
    if (o.limits && o.limits.length) {
      right.appendChild(table([{ label: "resource" }, { label: "waves/SIMD", num: 1 }, { label: "detail" }],
        o.limits.map(function (l) { return [l.name, l.waves_per_simd === null ? "-" : String(l.waves_per_simd), l.detail]; }), { id: "occ-limits" }));
    }
    (o.explanation || []).forEach(function (x) { right.appendChild(el("p", { class: "muted", text: x })); });
  }

  // ------------------------------------------------------------------ findings
  function renderValue(v, depth) {
    depth = depth || 0;
    if (v === null || v === undefined) return el("span", { class: "muted", text: "null" });
    if (Array.isArray(v)) {
      if (!v.length) return el("span", { class: "muted", text: "[]" });
      var objs = v.every(function (x) { return x && typeof x === "object" && !Array.isArray(x); });
      var shown = v.slice(0, 12);
      var more = v.length > shown.length ? el("div", { class: "muted", text: "… " + (v.length - shown.length) + " more" }) : null;
      if (objs) {
        var keys = [];
        shown.forEach(function (x) { Object.keys(x).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
        var t = table(keys.map(function (k) { return { label: k }; }), shown.map(function (x) {
          return keys.map(function (k) { var y = x[k]; return (y !== null && typeof y === "object") ? JSON.stringify(y) : (y === undefined ? "" : String(y)); });
        }));
        return el("div", null, t, more);
      }
      var ul = el("ul");
      shown.forEach(function (x) { ul.appendChild(el("li", null, typeof x === "object" ? JSON.stringify(x) : String(x))); });
      return el("div", null, ul, more);
    }
    if (typeof v === "object") {
      if (depth > 2) return el("span", { text: JSON.stringify(v) });
      var dl = el("dl");
      Object.keys(v).forEach(function (k) { dl.appendChild(el("dt", { text: k })); dl.appendChild(el("dd", null, renderValue(v[k], depth + 1))); });
      return dl;
    }
    if (typeof v === "number" && !Number.isInteger(v)) return el("span", { text: String(Math.round(v * 1e4) / 1e4) });
    if (typeof v === "number") return el("span", { text: fmtInt(v) });
    return el("span", { text: String(v) });
  }
  function renderFindings() {
    var s = section("findings");
    if (!P.findings.length) s.appendChild(el("p", { id: "no-findings", text: "No rule fired: no pattern above its threshold." }));
    P.findings.forEach(function (f, i) {
      var stake = f.kind === "performance" && f.severity !== "INFO" ? fmtInt(f.cycles_at_stake) + " cycles at stake (" + fmtPct(f.share_of_cycles) + " of all cycles)" : ({ capture: "capture quality", dispatch: "whole dispatch" }[f.kind] || "no action");
      s.appendChild(el("article", { class: "finding", data: { rule: f.rule } },
        el("h3", null, (i + 1) + ". ", el("span", { class: "sev sev-" + f.severity, text: f.severity }), " ", f.title),
        el("div", { class: "meta", text: "rule " + f.rule + " · " + stake + " · confidence " + fmtNum(f.confidence, 2) }),
        el("div", { class: "evidence" }, renderValue(f.evidence)),
        el("p", null, el("b", { text: "Change: " }), f.change),
        el("p", null, el("b", { text: "Would prove it wrong: " }), f.falsify)));
    });
    Object.keys(P.rule_errors || {}).forEach(function (r) {
      s.appendChild(el("p", { class: "warn", text: "rule " + r + " failed: " + P.rule_errors[r] }));
    });
  }

  // ------------------------------------------------------------------ source + ISA
  var ISA = DATA.isa, SRC = DATA.source, DEPS = DATA.deps;
  var nIsa = ISA.pc.length;
  // PC sampling: why the sampled waves stalled, beside the trace's cycles (docs/pcsampling.md)
  var PCS = ISA.pc_samples || null;
  function reasonMix(pairs, stalled) {
    if (stalled === null || stalled === undefined) return "(host-trap: no issue bit)";
    if (!stalled) return pairs.length ? "" : "issued only";
    pairs.sort(function (a, b) { return b[1] - a[1]; });
    return pairs.slice(0, 3).map(function (p) { return p[0] + " " + fmtPct(p[1] / stalled, 0); }).join(" · ");
  }
  function lineMix(ps) {
    if (!ps || !ps.samples) return "";
    return reasonMix(Object.keys(ps.reasons).map(function (k) { return [k, ps.reasons[k]]; }), ps.stalled);
  }
  if (PCS) {
    ISA.pcs_samples = PCS.samples;
    ISA.pcs_why = PCS.samples.map(function (n, i) {
      if (!n) return "";
      var byr = PCS.by_reason ? PCS.by_reason[i] : [];
      return reasonMix(byr.map(function (c, k) { return [PCS.reasons[k], c]; }).filter(function (p) { return p[1] > 0; }),
        PCS.stalled ? PCS.stalled[i] : null);
    });
  }
  var rowOfPc = {}, lineOfPc = {};
  for (var ii = 0; ii < nIsa; ii++) rowOfPc[ISA.pc[ii]] = ii;
  SRC.lines.forEach(function (ln, li) { ln.pcs.forEach(function (pc) { lineOfPc[pc] = li; }); });
  var waitersOf = {};  // producer pc -> [[wait pc, cycles]]
  Object.keys(DEPS.waits).forEach(function (w) {
    DEPS.waits[w].forEach(function (pr) { (waitersOf[pr[0]] = waitersOf[pr[0]] || []).push([Number(w), pr[1]]); });
  });
  Object.keys(waitersOf).forEach(function (p) { waitersOf[p].sort(function (a, b) { return b[1] - a[1]; }); });

  var isaRows = [], srcRowsByLine = {}, srcPane, isaPane, depsPanel;
  var state = { pc: null, line: null, expanded: null, marked: [] };

  function isaText(pc) { var r = rowOfPc[pc]; return r === undefined ? "?" : ISA.text[r]; }
  function pcRef(pc) {
    return el("span", { class: "pcref", text: "pc " + pc, onclick: function () { selectPc(pc, true); } });
  }

  function clearMarks() {
    state.marked.forEach(function (e) { e.classList.remove("sel", "in-line", "dep-producer", "dep-wait", "sel-line"); });
    state.marked = [];
  }
  function mark(e, c) { if (e) { e.classList.add(c); state.marked.push(e); } }

  function selectLine(li, scrollIsa) {
    clearMarks();
    state.pc = null;
    state.line = li;
    (srcRowsByLine[li] || []).forEach(function (r) { mark(r, "sel-line"); });
    var first = null;
    SRC.lines[li].pcs.forEach(function (pc) {
      var r = isaRows[rowOfPc[pc]];
      if (r) { mark(r, "in-line"); if (!first && !r.hidden) first = r; }
    });
    if (scrollIsa && first) scrollWithin(isaPane, first);
    renderDepsForLine(li);
  }

  function selectPc(pc, scrollIsa) {
    clearMarks();
    state.pc = pc;
    var li = lineOfPc[pc];
    state.line = li === undefined ? null : li;
    if (li !== undefined) {
      (srcRowsByLine[li] || []).forEach(function (r) { mark(r, "sel-line"); });
      if (srcRowsByLine[li] && srcRowsByLine[li][0]) scrollWithin(srcPane, srcRowsByLine[li][0]);
      SRC.lines[li].pcs.forEach(function (p) { mark(isaRows[rowOfPc[p]], "in-line"); });
    }
    (DEPS.waits[pc] || []).forEach(function (pr) { mark(isaRows[rowOfPc[pr[0]]], "dep-producer"); });
    (waitersOf[pc] || []).forEach(function (w) { mark(isaRows[rowOfPc[w[0]]], "dep-wait"); });
    var row = isaRows[rowOfPc[pc]];
    mark(row, "sel");
    if (row && scrollIsa) scrollWithin(isaPane, row);
    renderDeps(pc);
  }

  function renderDeps(pc) {
    depsPanel.textContent = "";
    var r = rowOfPc[pc];
    add(depsPanel, el("div", null, el("b", { text: "pc " + pc + ": " }), el("code", { text: isaText(pc) }),
      r !== undefined ? el("span", { class: "muted", text: "  " + (ISA.source[r] || "(no source)") }) : null));
    var waits = DEPS.waits[pc], prod = DEPS.producers[pc], waiters = waitersOf[pc];
    if (waits && waits.length) {
      var tot = waits.reduce(function (s, x) { return s + x[1]; }, 0);
      depsPanel.appendChild(el("div", { text: "This wait waited on " + waits.length + " memory op(s) (green: this wait, red: its producers):" }));
      depsPanel.appendChild(table([{ label: "producer" }, { label: "instruction" }, { label: "cycles charged", num: 1 }, { label: "share", num: 1 }],
        waits.slice(0, 20).map(function (x) { return [pcRef(x[0]), el("code", { text: isaText(x[0]) }), fmtInt(x[1]), fmtPct(tot ? x[1] / tot : null)]; }), { id: "deps-producers" }));
    }
    if (prod || (waiters && waiters.length)) {
      if (prod) depsPanel.appendChild(el("div", { text: "Memory op waited on for " + fmtInt(prod.waited) + " cycles (" + prod.class + ") over " + fmtInt(prod.pairs) +
        " waits; load-to-use distance median " + fmtNum(prod.dist_instr_median, 0) + " instructions / " + fmtInt(prod.dist_cycles_median) + " cycles; " + fmtNum(prod.outstanding_mean, 1) + " ops outstanding on average." }));
      if (waiters && waiters.length) {
        depsPanel.appendChild(el("div", { text: "Waits that waited on it (green):" }));
        depsPanel.appendChild(table([{ label: "wait" }, { label: "instruction" }, { label: "cycles charged", num: 1 }],
          waiters.slice(0, 20).map(function (x) { return [pcRef(x[0]), el("code", { text: isaText(x[0]) }), fmtInt(x[1])]; }), { id: "deps-waits" }));
      }
    }
    if (!(waits && waits.length) && !prod && !(waiters && waiters.length)) {
      depsPanel.appendChild(el("div", { class: "muted", text: "No memory → wait dependency through this instruction." }));
    }
  }
  function renderDepsForLine(li) {
    depsPanel.textContent = "";
    var ln = SRC.lines[li];
    add(depsPanel, el("div", null, el("b", { text: ln.key }), "  " + ln.pcs.length + " instruction(s), " + ln.executed + " executed; stall " + fmtInt(ln.stall) + ", latency " + fmtInt(ln.latency) +
      (ln.dominant_class ? ", mostly " + ln.dominant_class : "")));
    (ln.inline_chains || []).forEach(function (c) { depsPanel.appendChild(el("div", { class: "muted", text: "inlined at: " + c })); });
    depsPanel.appendChild(el("div", { class: "muted", text: "Click an instruction for its memory → wait dependencies." }));
  }

  // The ISA table fits its pane: the instruction text takes what the other
  // columns leave (and ellipsizes); the panes share the width so that the
  // ISA pane holds every other column plus room for the text, and stack when
  // the window cannot hold both side by side. The user may drag the splitter.
  var SRC_MIN = 320, INS_MIN = 200, INS_MORE = 120;
  function fitSplit(grid, left, splitter, table, cols) {
    var userWidth = null, drag = null;
    function isaMin() {
      var ths = table.tHead.rows[0].cells, w = 0;
      for (var k = 0; k < ths.length; k++) if (cols[k].key !== "text") w += ths[k].getBoundingClientRect().width;
      return Math.ceil(w + INS_MIN + 4);
    }
    function gapWidth() { return splitter.getBoundingClientRect().width + 2 * (parseFloat(getComputedStyle(grid).columnGap) || 0); }
    function layout() {
      var need = isaMin(), total = grid.clientWidth;
      grid.style.setProperty("--isa-min", need + "px");
      var room = total - need - gapWidth();
      grid.classList.toggle("stacked", room < SRC_MIN);
      if (room < SRC_MIN) return;
      // by default half each, but the ISA text gets INS_MORE px more when the source keeps SRC_MIN
      var w = userWidth === null ? Math.min(total / 2, Math.max(room - INS_MORE, SRC_MIN)) : Math.min(Math.max(userWidth, SRC_MIN), room);
      grid.style.setProperty("--src-w", Math.floor(w) + "px");
    }
    function setWidth(w) { userWidth = w; layout(); }
    splitter.addEventListener("pointerdown", function (ev) {
      drag = { x: ev.clientX, w: left.getBoundingClientRect().width };
      splitter.setPointerCapture(ev.pointerId);
      splitter.classList.add("dragging");
      ev.preventDefault();
    });
    splitter.addEventListener("pointermove", function (ev) { if (drag) setWidth(drag.w + ev.clientX - drag.x); });
    function end() { drag = null; splitter.classList.remove("dragging"); }
    splitter.addEventListener("pointerup", end);
    splitter.addEventListener("pointercancel", end);
    splitter.addEventListener("keydown", function (ev) {
      var step = ev.shiftKey ? 160 : 40, w = left.getBoundingClientRect().width;
      if (ev.key === "ArrowLeft") setWidth(w - step);
      else if (ev.key === "ArrowRight") setWidth(w + step);
      else return;
      ev.preventDefault();
    });
    splitter.addEventListener("dblclick", function () { userWidth = null; layout(); });
    var rt = null;
    window.addEventListener("resize", function () { clearTimeout(rt); rt = setTimeout(layout, 50); });
    layout();
    api.codeLayout = function () { return { stacked: grid.classList.contains("stacked"), isaMin: isaMin(), srcWidth: left.getBoundingClientRect().width }; };
  }

  function renderCode() {
    var s = section("code");
    s.appendChild(el("p", { class: "muted", text: "Heat bars: red = stall, blue = latency, relative to the hottest line. Click a source line to expand it and highlight its instructions in the ISA view; click an instruction to select its line and list the memory ops it waited on (or the waits that waited on it)." }));
    // source | splitter | ISA: the splitter resizes the two panes (drag, or arrow keys)
    var grid = el("div", { class: "split", id: "code-split" });
    s.appendChild(grid);

    // --- source view
    var left = el("div");
    var metricSel = el("select", { id: "src-metric" }, el("option", { value: "stall", text: "stall" }), el("option", { value: "latency", text: "latency" }),
      SRC.lines.some(function (l) { return l.exposed !== null; }) ? el("option", { value: "exposed", text: "exposed" }) : null,
      PCS ? el("option", { value: "samples", text: "PC samples" }) : null);
    var orderSel = el("select", { id: "src-order" }, el("option", { value: "file", text: "file order" }), el("option", { value: "hot", text: "hottest first" }));
    left.appendChild(el("h3", { text: "Source view" }));
    left.appendChild(el("div", { class: "controls" }, el("label", null, "value ", metricSel), el("label", null, "order ", orderSel)));
    srcPane = el("div", { class: "pane", id: "src-pane" });
    left.appendChild(srcPane);
    grid.appendChild(left);
    var splitter = el("div", { class: "splitter", id: "code-splitter", role: "separator", tabindex: "0", "aria-orientation": "vertical",
      "aria-label": "resize the source and ISA views", title: "drag (or arrow keys) to resize; double-click to fit the ISA table" });
    grid.appendChild(splitter);

    // --- ISA view
    var right = el("div");
    right.appendChild(el("h3", { text: "ISA view" }));
    var filter = el("input", { type: "search", id: "isa-filter", placeholder: "filter: text, class, source or pc", "aria-label": "filter instructions" });
    var clsSel = el("select", { id: "isa-class" }, el("option", { value: "", text: "all classes" }));
    ISA.classes.slice().sort().forEach(function (c) { clsSel.appendChild(el("option", { value: c, text: c })); });
    var execOnly = el("input", { type: "checkbox", id: "isa-executed" });
    var count = el("span", { class: "muted", id: "isa-count" });
    right.appendChild(el("div", { class: "controls" }, filter, clsSel, el("label", null, execOnly, " executed only"), count));
    isaPane = el("div", { class: "pane", id: "isa-pane" });
    right.appendChild(isaPane);
    depsPanel = el("div", { id: "deps-panel" }, el("span", { class: "muted", text: "Select an instruction or a source line." }));
    right.appendChild(depsPanel);
    grid.appendChild(right);

    var hasExposed = ISA.exposed !== null;
    var cols = [
      { key: "pc", label: "pc", num: 1 }, { key: "text", label: "instruction" }, { key: "cls", label: "class" },
      { key: "hit", label: "hit", num: 1 }, { key: "latency", label: "latency", num: 1 }, { key: "stall", label: "stall", num: 1 },
      { key: "idle", label: "idle", num: 1 }];
    if (hasExposed) cols.push({ key: "exposed", label: "exposed", num: 1, title: "idle + latency not hidden by other waves' work" });
    cols.push({ key: "waited_on", label: "waited on", num: 1, title: "wait cycles other instructions spent waiting for this memory op" });
    if (PCS) {
      cols.push({ key: "pcs_samples", label: "samples", num: 1, title: "PC samples at this instruction" });
      cols.push({ key: "pcs_why", label: "sampled why", title: "why the sampled waves did not issue: share of the stalled samples per reason" });
    }
    cols.push({ key: "source", label: "source" });
    var maxStall = Math.max.apply(null, ISA.stall.concat([1]));
    var t = el("table", { class: "data", id: "isa-table" });
    var hr = el("tr");
    cols.forEach(function (c) {
      hr.appendChild(el("th", { class: c.num ? "num" : null, text: c.label, title: c.title || "sort by " + c.label, data: { key: c.key }, onclick: function () { sortBy(c.key); } }));
    });
    t.appendChild(el("thead", null, hr));
    var tb = el("tbody");
    for (var i = 0; i < nIsa; i++) {
      var pc = ISA.pc[i], cls = ISA.classes[ISA.cls[i]];
      var tr = el("tr", { class: "isa-row" + (ISA.hit[i] ? "" : " unexec"), data: { pc: pc } });
      tr.appendChild(el("td", { class: "num", text: pc }));
      tr.appendChild(el("td", { class: "ins", text: ISA.text[i], title: ISA.text[i] }));
      tr.appendChild(el("td", null, el("span", { class: "swatch", style: { background: classColor(cls) } }), cls));
      tr.appendChild(el("td", { class: "num", text: fmtInt(ISA.hit[i]) }));
      tr.appendChild(el("td", { class: "num", text: fmtInt(ISA.latency[i]) }));
      var sc = el("td", { class: "num heatcell", text: fmtInt(ISA.stall[i]) });
      if (ISA.stall[i] > 0) sc.appendChild(el("span", { class: "bar", style: { width: (100 * ISA.stall[i] / maxStall) + "%" } }));
      tr.appendChild(sc);
      tr.appendChild(el("td", { class: "num", text: fmtInt(ISA.idle[i]) }));
      if (hasExposed) tr.appendChild(el("td", { class: "num", text: fmtInt(ISA.exposed[i]) }));
      tr.appendChild(el("td", { class: "num", text: ISA.waited_on[i] ? fmtInt(ISA.waited_on[i]) : "" }));
      if (PCS) {
        tr.appendChild(el("td", { class: "num pcs-n", text: ISA.pcs_samples[i] ? fmtInt(ISA.pcs_samples[i]) : "" }));
        tr.appendChild(el("td", { class: "pcs-why", text: ISA.pcs_why[i] }));
      }
      tr.appendChild(el("td", { class: "src", text: shortSource(ISA.source[i]), title: ISA.source[i] || "" }));
      tr.addEventListener("click", (function (p) { return function () { selectPc(p, false); }; })(pc));
      isaRows.push(tr);
      tb.appendChild(tr);
    }
    t.appendChild(tb);
    isaPane.appendChild(t);
    fitSplit(grid, left, splitter, t, cols);

    var sortState = { key: "pc", dir: 1 };
    function sortBy(key) {
      var dir = sortState.key === key ? -sortState.dir : (key === "pc" || key === "text" || key === "cls" || key === "source" ? 1 : -1);
      sortState = { key: key, dir: dir };
      var col = key === "cls" ? ISA.cls.map(function (c) { return ISA.classes[c]; }) : ISA[key];
      var idx = [];
      for (var k = 0; k < nIsa; k++) idx.push(k);
      idx.sort(function (a, b) {
        var x = col[a], y = col[b];
        if (x === y) return ISA.pc[a] - ISA.pc[b];
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * dir;
      });
      var frag = document.createDocumentFragment();
      idx.forEach(function (k) { frag.appendChild(isaRows[k]); });
      tb.appendChild(frag);
      Array.prototype.forEach.call(hr.children, function (th) {
        if (th.dataset.key === key) th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending"); else th.removeAttribute("aria-sort");
      });
      isaPane.scrollTop = 0;
    }
    function applyFilter() {
      var q = filter.value.trim().toLowerCase(), c = clsSel.value, ex = execOnly.checked, shown = 0;
      var pcq = /^pc\s*[:=]?\s*(\d+)$/.exec(q);
      for (var k = 0; k < nIsa; k++) {
        var ok = true;
        if (c && ISA.classes[ISA.cls[k]] !== c) ok = false;
        if (ok && ex && !ISA.hit[k]) ok = false;
        if (ok && q) {
          if (pcq) ok = ISA.pc[k] === Number(pcq[1]);
          else ok = ISA.text[k].toLowerCase().indexOf(q) >= 0 || (ISA.source[k] || "").toLowerCase().indexOf(q) >= 0 ||
            ISA.classes[ISA.cls[k]].indexOf(q) >= 0 || String(ISA.pc[k]) === q;
        }
        isaRows[k].hidden = !ok;
        if (ok) shown++;
      }
      count.textContent = shown + " of " + nIsa + " instructions";
    }
    filter.addEventListener("input", applyFilter);
    clsSel.addEventListener("change", applyFilter);
    execOnly.addEventListener("change", applyFilter);
    applyFilter();

    // source rows
    function lineValue(ln) {
      var m = metricSel.value;
      if (m === "samples") return ln.pc_samples ? ln.pc_samples.samples : 0;
      return ln[m] === null || ln[m] === undefined ? 0 : ln[m];
    }
    function buildSource() {
      srcPane.textContent = "";
      srcRowsByLine = {};
      state.expanded = null;
      var maxV = SRC.lines.reduce(function (m, l) { return Math.max(m, lineValue(l)); }, 1);
      var maxL = SRC.lines.reduce(function (m, l) { return Math.max(m, l.latency); }, 1);
      var frag = document.createDocumentFragment();
      function srcRow(li, lineNo, text, label) {
        var ln = li === null ? null : SRC.lines[li];
        var heat = el("div", { class: "heat" });
        if (ln) {
          heat.appendChild(el("div", { class: "b1", style: { width: (100 * lineValue(ln) / maxV) + "%" } }));
          heat.appendChild(el("div", { class: "b2", style: { width: (100 * ln.latency / maxL) + "%" } }));
        }
        var why = ln && ln.pc_samples ? "; " + fmtInt(ln.pc_samples.samples) + " PC samples" + (lineMix(ln.pc_samples) ? ": " + lineMix(ln.pc_samples) : "") : "";
        var row = el("div", { class: "src-row" + (ln ? " mapped" : " dim"), title: ln ? ln.key + ": stall " + fmtInt(ln.stall) + ", latency " + fmtInt(ln.latency) + ", " + ln.executed + "/" + ln.pcs.length + " instructions executed" + why : null },
          heat, el("span", { class: "ln", text: label !== undefined ? label : (lineNo === null ? "" : String(lineNo)) }),
          el("span", { class: "txt", text: text }), el("span", { class: "val", text: ln ? fmtCompact(lineValue(ln)) : "" }));
        if (ln) {
          row.dataset.line = String(li);
          row.dataset.source = ln.key;
          (srcRowsByLine[li] = srcRowsByLine[li] || []).push(row);
          row.addEventListener("click", function () { toggleExpand(row, li); });
        }
        frag.appendChild(row);
      }
      if (orderSel.value === "hot") {
        var order = SRC.lines.map(function (l, i) { return i; }).filter(function (i) { return SRC.lines[i].hit > 0; });
        order.sort(function (a, b) { return lineValue(SRC.lines[b]) - lineValue(SRC.lines[a]) || a - b; });
        frag.appendChild(el("div", { class: "src-file", text: "Executed source lines, hottest first (" + metricSel.value + ")" }));
        order.forEach(function (li) { srcRow(li, null, SRC.lines[li].key, String(order.indexOf(li) + 1)); });
      } else {
        var byFile = {};
        SRC.lines.forEach(function (l, i) { var k = l.file === null ? "" : l.file; (byFile[k] = byFile[k] || []).push(i); });
        var files = SRC.files.map(function (f) { return f.file; });
        SRC.files.forEach(function (f) {
          var idxs = byFile[f.file] || [];
          var byNo = {};
          idxs.forEach(function (i) { byNo[SRC.lines[i].line === null ? -1 : SRC.lines[i].line] = i; });
          frag.appendChild(el("div", { class: "src-file", text: f.file + (f.text ? "" : f.omitted ? "  (source text left out: " + f.omitted + "; lines with instructions only)" : "  (source text not in the capture: lines with instructions only)") }));
          if (byNo[-1] !== undefined) srcRow(byNo[-1], null, "(no line number)", "?");
          if (f.text) {
            var n = f.text.length;
            idxs.forEach(function (i) { if (SRC.lines[i].line > n) n = SRC.lines[i].line; });
            for (var k = 1; k <= n; k++) srcRow(byNo[k] === undefined ? null : byNo[k], k, k <= f.text.length ? f.text[k - 1] : "");
          } else {
            idxs.filter(function (i) { return SRC.lines[i].line !== null; }).sort(function (a, b) { return SRC.lines[a].line - SRC.lines[b].line; })
              .forEach(function (i) { srcRow(i, SRC.lines[i].line, shortSource(SRC.lines[i].key)); });
          }
        });
        if (byFile[""]) {
          frag.appendChild(el("div", { class: "src-file", text: "(no source line)" }));
          byFile[""].forEach(function (i) { srcRow(i, null, "instructions without a source line", "-"); });
        }
        if (!files.length && !byFile[""]) frag.appendChild(el("div", { class: "muted", text: "No instruction." }));
      }
      srcPane.appendChild(frag);
      if (state.line !== null && state.line !== undefined) (srcRowsByLine[state.line] || []).forEach(function (r) { mark(r, "sel-line"); });
    }
    function toggleExpand(row, li) {
      var open = row.nextSibling && row.nextSibling.classList && row.nextSibling.classList.contains("src-expand");
      if (open) row.parentNode.removeChild(row.nextSibling);
      else {
        var box = el("div", { class: "src-expand" });
        var pcs = SRC.lines[li].pcs.slice().sort(function (a, b) { return a - b; });
        pcs.forEach(function (pc) {
          var r = rowOfPc[pc];
          var line = "pc " + pc + "  " + (ISA.stall[r] ? "stall " + fmtCompact(ISA.stall[r]) : "") + "  " + ISA.text[r] +
            (PCS && ISA.pcs_samples[r] ? "  [" + fmtInt(ISA.pcs_samples[r]) + " samples: " + ISA.pcs_why[r] + "]" : "");
          box.appendChild(el("div", { text: line, title: ISA.text[r], data: { pc: pc }, onclick: function (ev) { ev.stopPropagation(); selectPc(pc, true); } }));
        });
        row.parentNode.insertBefore(box, row.nextSibling);
      }
      selectLine(li, true);
    }
    metricSel.addEventListener("change", buildSource);
    orderSel.addEventListener("change", buildSource);
    buildSource();

    // top producers
    var prods = Object.keys(DEPS.producers).map(Number).sort(function (a, b) { return DEPS.producers[b].waited - DEPS.producers[a].waited; }).slice(0, 10);
    if (prods.length) {
      s.appendChild(el("h3", { text: "Memory ops most waited on (memory → wait)" }));
      s.appendChild(table([{ label: "pc" }, { label: "instruction" }, { label: "class" }, { label: "waited on", num: 1 }, { label: "share", num: 1 }, { label: "waits", num: 1 }, { label: "distance (instr, median)", num: 1 }, { label: "source" }],
        prods.map(function (pc) {
          var p = DEPS.producers[pc], r = rowOfPc[pc];
          return [pcRef(pc), el("code", { text: isaText(pc) }), p.class, fmtInt(p.waited), fmtPct(DEPS.total_charged ? p.waited / DEPS.total_charged : null), fmtInt(p.pairs), fmtNum(p.dist_instr_median, 0), r === undefined ? "-" : shortSource(ISA.source[r])];
        }), { id: "top-producers" }));
    }
  }

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
      " Wheel: zoom; drag: pan; double-click: reset." }));
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
    var tip = el("div", { id: "tl-tip" });
    wrap.appendChild(canvas); wrap.appendChild(occ); wrap.appendChild(tip);
    s.appendChild(wrap);
    s.appendChild(el("div", { class: "legend", id: "occ-legend" }, "Occupancy over time (lower chart): mean waves per SIMD over the " + nSimd + " traced SIMDs, stacked by state; dashed: theoretical " +
      (A.occupancy.theoretical_waves_per_simd === null ? "(unknown)" : A.occupancy.theoretical_waves_per_simd) + " waves per SIMD."));

    var laneH = Math.max(3, Math.min(14, Math.floor(560 / nL))), gutter = 120, axisH = 22, occH = 120;
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
    }
    function drawOcc() {
      var g = sizeCanvas(occ, occH), ctx = g.ctx, plotW = g.w - gutter, O = TL.occupancy, sc = O.scale * nSimd;
      var top = 8, h = occH - 26;
      ctx.clearRect(0, 0, g.w, occH);
      var theo = A.occupancy.theoretical_waves_per_simd, maxR = 0, b;
      for (b = Math.floor(view.v0); b < Math.min(nB, Math.ceil(view.v1)); b++) maxR = Math.max(maxR, O.resident[b] / sc);
      var ymax = Math.max(1, maxR, theo || 0) * 1.1;
      var order = ["EXEC", "WAIT", "STALL", "IDLE"], span = view.v1 - view.v0;
      for (var x = 0; x < plotW; x++) {
        var b0 = view.v0 + x * span / plotW, b1 = view.v0 + (x + 1) * span / plotW;
        var lo = Math.floor(b0), hi = Math.max(lo + 1, Math.ceil(b1));
        if (lo >= nB) break;
        hi = Math.min(hi, nB);
        var acc = 0;
        for (var si = 0; si < order.length; si++) {
          var arr = O.states[order[si]], sum = 0;
          for (b = lo; b < hi; b++) sum += arr[b];
          var v = sum / (hi - lo) / sc;
          if (v > 0) {
            ctx.fillStyle = STATE_COLORS[order[si]];
            var y0 = top + h - (acc + v) / ymax * h;
            ctx.fillRect(gutter + x, y0, 1, v / ymax * h);
          }
          acc += v;
        }
      }
      if (theo) {
        var yt = top + h - theo / ymax * h;
        ctx.strokeStyle = "#1d2330"; ctx.setLineDash([5, 4]); ctx.beginPath(); ctx.moveTo(gutter, yt); ctx.lineTo(g.w, yt); ctx.stroke(); ctx.setLineDash([]);
      }
      ctx.fillStyle = "#1d2330"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
      ctx.fillText("waves / SIMD", 4, top + 8);
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
    canvas.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, v0: view.v0, v1: view.v1 }; canvas.classList.add("dragging"); });
    window.addEventListener("mouseup", function () { drag = null; canvas.classList.remove("dragging"); });
    canvas.addEventListener("dblclick", function () { view.v0 = 0; view.v1 = nB; draw(); });
    canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    canvas.addEventListener("mousemove", function (ev) {
      if (drag) {
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
      var lw = laneWaves[p.lane];
      for (var wi = lw[0]; wi < lw[1]; wi++) {
        if (wb[wi] <= cyc && cyc < we[wi]) {
          var stt = TL.waves.states[wi], tot = stt[0] + stt[1] + stt[2] + stt[3] || 1;
          lines.push("wave #" + TL.waves.index[wi] + ": cycles " + fmtInt(wb[wi]) + " – " + fmtInt(we[wi]) + ", " + fmtInt(TL.waves.records[wi]) + " records");
          lines.push("EXEC " + fmtPct(stt[1] / tot) + "  WAIT " + fmtPct(stt[2] / tot) + "  STALL " + fmtPct(stt[3] / tot) + "  IDLE " + fmtPct(stt[0] / tot));
          break;
        }
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
    api.timeline = { view: function () { return [view.v0, view.v1]; }, zoom: function (a, b) { view.v0 = Math.max(0, a); view.v1 = Math.min(nB, b); draw(); }, draw: draw };
  }

  // ------------------------------------------------------------------ pipes + phases
  function renderPipes() {
    var s = section("pipes"), pk = W.pipes.kernel, pipes = Object.keys(pk);
    s.appendChild(el("p", { class: "muted", text: "Share of the traced window each pipe was busy (union of its instructions' issue intervals per SIMD, summed over " + W.pipes.per_simd.length + " SIMDs; window " + fmtInt(W.pipes.total_window_cycles) + " cycles)." }));
    s.appendChild(table([{ label: "pipe" }, { label: "issue cycles", num: 1 }, { label: "busy cycles", num: 1 }, { label: "busy share", num: 1 }, { label: "" }],
      pipes.map(function (p) {
        var v = pk[p], w = v.busy_share === null ? 0 : Math.min(1, v.busy_share);
        return { attrs: { data: { pipe: p } }, cells: [p, fmtInt(v.issue_cycles), fmtInt(v.busy_cycles), fmtPct(v.busy_share),
          el("div", { style: { width: "220px", height: "10px", background: "#eef1f6", borderRadius: "2px" } }, el("div", { style: { width: (100 * w) + "%", height: "10px", background: "#4a7bd0", borderRadius: "2px" } }))] };
      }), { id: "pipes-table" }));
    if (W.pipes.per_simd.length > 1 && W.pipes.per_simd.length <= 64) {
      s.appendChild(el("h3", { text: "Busy share per SIMD" }));
      s.appendChild(table([{ label: "SE" }, { label: "CU" }, { label: "SIMD" }].concat(pipes.map(function (p) { return { label: p, num: 1 }; })),
        W.pipes.per_simd.map(function (r) {
          return [String(r.se), String(r.cu), String(r.simd)].concat(pipes.map(function (p) { return fmtPct(r.pipes[p].busy_share); }));
        })));
    }
    var ph = W.phases.kernel;
    s.appendChild(el("h3", { text: "Phases" }));
    s.appendChild(table([{ label: "phase" }, { label: "records", num: 1 }, { label: "stall", num: 1 }, { label: "latency", num: 1 }],
      Object.keys(ph).filter(function (k) { return ph[k].records; }).map(function (k) { return [k, fmtInt(ph[k].records), fmtInt(ph[k].stall), fmtInt(ph[k].latency)]; }), { id: "phases-table" }));
  }

  // ------------------------------------------------------------------ PMC
  function renderPmc() {
    var s = section("pmc"), p = DATA.pmc;
    if (!p) {
      s.appendChild(el("p", { class: "muted", id: "pmc-none", text: "No hardware-counter data attached to this report (collect it with `attlens pmc --target gfx950 -- PROGRAM`; see docs/pmc.md)." }));
      return;
    }
    var rng = function (r, f) { return r ? (r[0] === r[1] ? f(r[0]) : f(r[0]) + " – " + f(r[1])) : "n/a"; };
    var facts = [
      ["dispatch", (p.dispatch_id === null ? "n/a" : p.dispatch_id) + " " + (p.kernel || "")],
      ["target", (p.target.name || "n/a") + " " + (p.target.product || "") + ", peak " + fmtInt(p.target.peak_hbm_gbps) + " GB/s"],
      ["L2 hit rate", fmtPct(p.l2.hit_rate) + " (" + fmtCompact(p.l2.hits) + " hits, " + fmtCompact(p.l2.misses) + " misses, " + fmtCompact(p.l2.requests) + " requests)"],
      ["read from L2 / memory", rng(p.read.bytes_range, fmtBytes) + (p.read.method ? " (" + p.read.method + ")" : "")],
      ["written", fmtBytes(p.write.bytes)],
      ["HBM read / write", fmtBytes(p.hbm.read_bytes) + " / " + fmtBytes(p.hbm.write_bytes)],
      ["over-fetch", rng(p.over_fetch.ratio_range, function (x) { return fmtNum(x, 2) + "x"; })],
      ["bandwidth", rng(p.bandwidth.achieved_gbps_range, function (x) { return fmtNum(x, 0); }) + " GB/s, " + rng(p.bandwidth.fraction_of_peak_range, function (x) { return fmtPct(x); }) + " of peak"]
    ];
    var att = p.attached;
    if (att) facts.unshift(["counters from", att.source]);
    var dl = el("dl", { class: "facts", id: "pmc-facts" });
    facts.forEach(function (f) { dl.appendChild(el("dt", { text: f[0] })); dl.appendChild(el("dd", { text: f[1] })); });
    if (att) {
      // what was compared before the counters were attached (kernel, target, dispatch)
      var bad = att.checks.filter(function (c) { return c.match === false; });
      var unknown = att.checks.filter(function (c) { return c.match === null; });
      var li = function (c, why) { return el("li", { text: c.field + ": capture " + (c.capture === null ? "n/a" : c.capture) + ", counters " + (c.counters === null ? "n/a" : c.counters) + why }); };
      if (bad.length || unknown.length) {
        s.appendChild(el("ul", { class: "warnings", id: "pmc-mismatch" },
          bad.map(function (c) { return li(c, " — differ; attached with --force, these counters may describe another kernel or GPU"); }),
          unknown.map(function (c) { return li(c, " — not recorded on one side, not checked"); })));
      } else {
        s.appendChild(el("p", { class: "muted", id: "pmc-match", text: "Kernel, target and dispatch of the counters match the capture." }));
      }
    }
    s.appendChild(dl);
    s.appendChild(table([{ label: "decision" }, { label: "verdict" }, { label: "why" }],
      (p.decisions || []).map(function (d) {
        var v = d.verdict === true ? el("span", { class: "verdict-yes", text: "YES" }) : d.verdict === false ? el("span", { class: "verdict-no", text: "no" }) : el("span", { class: "verdict-na", text: "?" });
        return [d.title, v, d.text];
      }), { id: "pmc-decisions" }));
    (p.notes || []).forEach(function (n) { s.appendChild(el("p", { class: "muted", text: n })); });
  }

  // ------------------------------------------------------------------ reproduce
  function renderReproduce() {
    var s = section("reproduce");
    s.appendChild(el("pre", { class: "cmds", id: "reproduce-cmds", text: DATA.reproduce.join("\n") }));
    s.appendChild(el("p", { class: "muted", text: "Generated by attlens " + DATA.attlens_version + ". The numbers of this page are embedded as JSON in the attlens-data block of this file (the analysis object is schema " + A.schema + " v" + A.schema_version + ")." }));
  }

  var api = { data: DATA, selectPc: selectPc, selectLine: selectLine };
  window.attlensReport = api;
  guard("header", renderHeader);
  guard("headline", renderHeadline);
  guard("findings", renderFindings);
  guard("code", renderCode);
  guard("timeline", renderTimeline);
  guard("pipes", renderPipes);
  guard("pmc", renderPmc);
  guard("reproduce", renderReproduce);
  document.body.dataset.ready = "1";
})();
