/* attlens HTML report. Plain JavaScript, no library, no network.
   Every string from the trace is put in the page with textContent (or as an
   SVG/canvas text), never parsed as HTML.
   The page's script is this file followed by report_code.js,
   report_hotspots.js, report_timeline.js and report_init.js, in one
   function scope (report/html.py joins them; none is valid alone). */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("attlens-data").textContent);
  var A = DATA.analysis, P = DATA.plan, W = DATA.waves, H = DATA.headline;
  // false (rocprofv2): the records carry no stall cycles: stall figures show "-" (unavailable, not 0)
  // and the rankings use latency, said once where they are shown
  var STALL_OK = !(A.capture && A.capture.stall_recorded === false);
  var STALL_NOTE = "Stall is not recorded by this profiler (rocprofv2): ranked by latency instead of stall.";
  function fmtStall(n) { return STALL_OK ? fmtInt(n) : "-"; }
  function fmtStallPct(x) { return STALL_OK ? fmtPct(x) : "-"; }
  var SVGNS = "http://www.w3.org/2000/svg";
  var api = { data: DATA };
  window.attlensReport = api;

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


  // ------------------------------------------------------------------ packed arrays
  // Large integer arrays are embedded as {"$z": base64 of zlib data, "n", "t"}
  // (report/viewerdata.py); the browser's DecompressionStream inflates them.
  var TYPED = { i8: Int8Array, i16: Int16Array, i32: Int32Array, f64: Float64Array };
  function isPacked(v) { return v !== null && typeof v === "object" && typeof v.$z === "string"; }
  function inflate(b64) {
    var bin = atob(b64), u8 = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    var stream = new Blob([u8]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer();
  }
  function unpack(obj) {
    // one typed array, or (several columns in one stream) a list of them
    return inflate(obj.$z).then(function (buf) {
      var many = Array.isArray(obj.t), kinds = many ? obj.t : [obj.t], counts = many ? obj.n : [obj.n], out = [], pos = 0;
      kinds.forEach(function (k, j) {
        var T = TYPED[k], n = counts[j];
        out.push(new T(buf.slice(pos, pos + n * T.BYTES_PER_ELEMENT)));
        pos += n * T.BYTES_PER_ELEMENT;
      });
      if (pos !== buf.byteLength) throw new Error("packed data holds " + buf.byteLength + " bytes, its header describes " + pos);
      return many ? out : out[0];
    });
  }
  function unpackTree(root, skip) {
    // replaces every packed array under root (not under the keys in skip) by its typed array
    var jobs = [];
    (function walk(o) {
      if (o === null || typeof o !== "object" || ArrayBuffer.isView(o)) return;
      Object.keys(o).forEach(function (k) {
        if (skip && skip.indexOf(k) >= 0) return;
        var v = o[k];
        if (isPacked(v)) jobs.push(unpack(v).then(function (a) { o[k] = a; }));
        else walk(v);
      });
    })(root);
    return Promise.all(jobs);
  }

  // ------------------------------------------------------------------ words and numbers
  function fmtNs(ns) {
    if (ns === null || ns === undefined) return "unknown";
    return ns >= 1000 ? fmtNum(ns / 1000, 2).replace(/\B(?=(\d{3})+(?!\d))/g, ",") + " µs" : fmtInt(ns) + " ns";
  }
  function fmtBytesSI(b) {
    if (b === null || b === undefined) return "unknown";
    var units = [["GB", 1e9], ["MB", 1e6], ["KB", 1e3]];
    for (var i = 0; i < units.length; i++) if (b >= units[i][1]) return fmtNum(b / units[i][1], 1) + " " + units[i][0];
    return fmtInt(b) + " B";
  }
  // the plan's bandwidth as the plan prints it (report/text.py, bandwidth_share_text): a range
  // for a streaming kernel whose two byte bounds differ, "≤" for a looping kernel's trace estimate
  function bandwidthShare(bw) {
    if (!bw || !bw.available || bw.fraction_of_peak === null || bw.fraction_of_peak === undefined) return null;
    var hi = bw.fraction_of_peak, lo = bw.fraction_of_peak_low, streaming = (bw.streaming_share || 0) >= 0.9;
    if (lo !== null && lo !== undefined && Math.abs(lo - hi) > 0.005 && streaming) return fmtPct(lo, 0) + "–" + fmtPct(hi, 0);
    if (bw.source === "trace" && !streaming) return "≤ " + fmtPct(hi, 0);
    return fmtPct(hi, 0);
  }
  // PC sampling (docs/pcsampling.md): why the sampled waves did not issue, as
  // the top three reasons' shares of the stalled samples ([[reason, count]])
  function reasonMix(pairs, stalled) {
    if (stalled === null || stalled === undefined) return "(host-trap: no issue bit)";
    if (!stalled) return pairs.length ? "" : "issued only";
    pairs.sort(function (a, b) { return b[1] - a[1]; });
    return pairs.slice(0, 3).map(function (p) { return p[0] + " " + fmtPct(p[1] / stalled, 0); }).join(" · ");
  }
  // a source line's (or the dispatch's) pc_samples object: {samples, stalled, reasons: {reason: count}}
  function lineMix(ps) {
    if (!ps || !ps.samples) return "";
    return reasonMix(Object.keys(ps.reasons).map(function (k) { return [k, ps.reasons[k]]; }), ps.stalled);
  }

  // Evidence keys as words: a key's last word says how to show its value.
  var LABELS = { isa: "instruction", pc: "pc", pcs: "pcs", hit: "executions", loop_pcs: "loop pcs", trips_mean: "trips per entry",
    dist_instr_median: "distance (instructions, median)", dist_cycles_median: "distance (cycles, median)" };
  function label(k) { return LABELS[k] || String(k).replace(/_/g, " "); }
  function semantic(k) {
    k = String(k);
    if (/(share|fraction|fill)/.test(k)) return "share";
    if (/bytes$/.test(k)) return "bytes";
    if (/(^|_)(pc|pcs|line|loop|id|producers|waits|needed_next)$/.test(k) || k === "already_first") return "id";
    if (/_ns$/.test(k)) return "ns";
    return null;
  }
  function fmtEvidence(key, v, parentKey) {
    // a value under a share- or bytes-valued parent (e.g. busy share by pipe) is shown as its parent's kind
    var up = parentKey ? semantic(parentKey) : null, sem = semantic(key) || (up === "share" || up === "bytes" ? up : null);
    if (v === null || v === undefined) return "—";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (typeof v === "number") {
      if (sem === "share" && Math.abs(v) <= 10) return fmtPct(v);
      if (sem === "id" && Number.isInteger(v)) return String(v);
      if (sem === "bytes") return v >= 1e6 ? fmtInt(v) + " (" + fmtBytesSI(v) + ")" : fmtInt(v);
      if (sem === "ns") return fmtNs(v);
      if (Number.isInteger(v) || Math.abs(v) >= 100) return fmtInt(v);
      return String(Number(v.toPrecision(3)));
    }
    if (Array.isArray(v)) return v.map(function (x) { return fmtEvidence(key, x, parentKey); }).join(", ");
    if (typeof v === "object") {
      return Object.keys(v).filter(function (k) { return v[k] !== null && v[k] !== undefined; })
        .map(function (k) { return label(k) + " " + fmtEvidence(k, v[k], key); }).join(" · ");
    }
    return String(v);
  }
  function isRecordList(v) { return Array.isArray(v) && v.length && v.every(function (x) { return x && typeof x === "object" && !Array.isArray(x); }); }
  function evidenceTable(rows, key) {
    // one column per key that holds a value in some row; pcs link to the ISA view
    var keys = [];
    rows.forEach(function (x) { Object.keys(x).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
    keys = keys.filter(function (k) { return rows.some(function (x) { var y = x[k]; return y !== null && y !== undefined && !(Array.isArray(y) && !y.length); }); });
    var shown = rows.slice(0, 12);
    var t = table(keys.map(function (k) { return { label: label(k), num: rows.every(function (x) { return x[k] === null || x[k] === undefined || typeof x[k] === "number"; }) && semantic(k) !== "id" }; }),
      shown.map(function (x) {
        return keys.map(function (k) {
          var y = x[k];
          if (k === "pc" && typeof y === "number" && typeof pcRef === "function") return pcRef(y);
          if (isRecordList(y)) return y.map(function (z) { return fmtEvidence(k, z, key); }).join("; ");
          return fmtEvidence(k, y, key);
        });
      }), { cls: "evidence-table" });
    return el("div", null, t, rows.length > shown.length ? el("div", { class: "muted", text: "… " + (rows.length - shown.length) + " more" }) : null);
  }
  function renderEvidence(ev) {
    var dl = el("dl");
    Object.keys(ev || {}).forEach(function (k) {
      var v = ev[k];
      if (v === null || v === undefined || (Array.isArray(v) && !v.length) || (typeof v === "object" && !Array.isArray(v) && !Object.keys(v).length)) return;
      var dd;
      if (isRecordList(v)) dd = evidenceTable(v, k);
      else if (typeof v === "object" && !Array.isArray(v) && Object.keys(v).some(function (x) { return v[x] !== null && typeof v[x] === "object"; })) dd = renderEvidence(v);
      else if (Array.isArray(v) && v.some(function (x) { return typeof x === "string" && x.length > 40; })) dd = el("ul", null, v.map(function (x) { return el("li", { text: fmtEvidence(k, x) }); }));
      else dd = document.createTextNode(fmtEvidence(k, v));
      dl.appendChild(el("dt", { text: label(k) }));
      dl.appendChild(el("dd", null, dd));
    });
    return dl;
  }
  function stakeText(f) {
    if (f.severity === "INFO" || f.kind === "note") return "no action";
    if (f.kind === "performance") return fmtInt(f.cycles_at_stake) + " traced wave-cycles at stake (" + fmtPct(f.share_of_cycles) + " of all)";
    if (f.kind === "dispatch" && f.dispatch_time && f.dispatch_time.bound_ns !== null && f.dispatch_time.bound_ns !== undefined)
      return "whole dispatch: bounds the " + fmtNs(f.dispatch_time.measured_ns) + " at " + fmtNs(f.dispatch_time.bound_ns);
    return { capture: "capture quality", dispatch: "whole dispatch" }[f.kind] || f.kind;
  }
  // a finding's predicted kernel-time gain (the what-if replay, docs/whatif.md), worded as report/text.py
  // predicted_text words it; null when the plan carries no prediction (unavailable, not a zero gain)
  function signedPct(x) { return x < -0.0005 ? "−" + fmtPct(-x) : fmtPct(Math.max(x, 0)); }
  function gainText(g) {
    if (g === null || g === undefined) return "gain unknown";
    if (Math.abs(g) < 0.0005) return "no change in kernel time";
    return fmtPct(Math.abs(g)) + (g > 0 ? " faster" : " slower");
  }
  function predictedText(p) {
    if (!p) return null;
    if (!p.expressible) return "not predicted: " + (p.reason || "the replay cannot express this change");
    var lohi = p.low === null || p.low === undefined || p.high === null || p.high === undefined ? "interval unknown" : signedPct(p.low) + " to " + signedPct(p.high);
    var t = "predicted " + gainText(p.gain) + " (" + lohi + ")";
    var b = p.dispatch_ns_before, a = p.dispatch_ns_after;
    if (b !== null && b !== undefined && a !== null && a !== undefined) t += ", " + fmtNs(Math.round(b)) + " → " + fmtNs(Math.round(a));
    if (p.bound) t += ", held by the " + p.bound + " bound";
    return t;
  }
  function stakeAndPrediction(f) {
    var p = predictedText(f.predicted);
    return stakeText(f) + (p ? " · " + p : "");
  }
  function loopsText(f) {
    var rows = (f.loops || []).slice(0, 4).map(function (w) {
      if (w.loop === null || w.loop === undefined) return "pc " + w.pc + ": " + (w.note || "outside loops");
      return "pc " + w.pc + " in loop " + w.loop + " (pcs " + w.loop_pcs[0] + "–" + w.loop_pcs[1] + ", " + fmtEvidence("trips", w.trips_mean) + " trips per entry)";
    });
    return rows.length ? rows.join("; ") + ((f.loops || []).length > 4 ? " … " + (f.loops.length - 4) + " more" : "") : null;
  }
  function ledgerText(f) {
    var shared = (f.ledger && f.ledger.shared) || [], parts = [];
    var yielded = shared.filter(function (s) { return s.held_by; }), partners = shared.filter(function (s) { return s.also_claimed_by; });
    if (yielded.length) {
      var held = {}; yielded.forEach(function (s) { s.held_by.forEach(function (r) { held[r] = 1; }); });
      parts.push("yields " + fmtInt(yielded.reduce(function (a, s) { return a + (s.cycles_not_granted || 0); }, 0)) + " cycles at pc " +
        yielded.slice(0, 4).map(function (s) { return s.pc; }).join(", ") + " to " + Object.keys(held).sort().join(", "));
    }
    if (partners.length) {
      var who = {}; partners.forEach(function (s) { who[s.also_claimed_by] = 1; });
      parts.push("shares pc " + partners.slice(0, 4).map(function (s) { return s.pc; }).join(", ") + " with " + Object.keys(who).sort().join(", ") + " (which got the rest)");
    }
    return parts.length ? parts.join("; ") : null;
  }

  // ------------------------------------------------------------------ first screen: verdict, top findings, warnings, notes
  var STALL_TERMS = "Two different measures are called stall. Instruction stall (code.json Stall, the ISA and class tables): the cycles each executed instruction waited before it issued, summed over its executions, as a share of latency. The STALL wave state (wave timeline, wave-state table): the share of the waves' lifetime that the decoder's wave-state timeline marks STALL; waiting on a memory counter (s_waitcnt) is the separate WAIT state. They count different things over different totals, so their percentages differ.";
  function verdict() {
    var v = P.verdict;
    if (v && v.sentence) return { sentence: v.sentence, kind: v.kind, numbers: v.numbers, from: "the plan's verdict" };
    var f = P.findings[0];
    if (!f) return { sentence: "No rule fired: no pattern above its threshold.", kind: null, numbers: null, from: "the plan" };
    return { sentence: "Top finding: " + f.severity + " " + f.title + " (" + f.rule + ")" + (f.kind === "performance" ? ", " + fmtPct(f.share_of_cycles) + " of cycles at stake." : "."),
      kind: f.kind, numbers: null, from: "the plan's first finding" };
  }
  function textOf(x) { return typeof x === "string" ? x : (x && (x.text || x.message || x.note)) || JSON.stringify(x); }
  function uniq(list) { var seen = {}; return list.filter(function (x) { if (seen[x]) return false; seen[x] = 1; return true; }); }
  function notesAndWarnings() {
    // notes: expected facts of the target or the capture layout (shown once, here);
    // warnings: what the user should act on. A text both lists carry is a note.
    var notes = uniq([].concat(A.notes || [], (P.dispatch && P.dispatch.notes) || [], P.notes || []).map(textOf));
    var warnings = [];
    P.findings.forEach(function (f) { if (f.kind === "capture") warnings.push(f.severity + " " + f.title + " [" + f.rule + "]"); });
    [].concat(A.warnings || [], W.flags || []).map(textOf).forEach(function (w) { if (notes.indexOf(w) < 0) warnings.push(w); });
    return { notes: notes, warnings: uniq(warnings) };
  }
  function card(id, value, lbl, title) {
    return el("div", { class: "card", title: title }, el("div", { class: "v", id: id, text: value }), el("div", { class: "l", text: lbl }));
  }
  function renderSummary() {
    var s = section("summary"), c = A.capture, t = A.target, dd = P.dispatch || {};
    s.appendChild(el("h1", { id: "kernel-name", text: c.kernel || "(unnamed kernel)" }));
    var tgt = t.name ? t.name + (t.product ? " (" + t.product + ")" : "") : "unknown target";
    var grid = dd.workgroups ? fmtInt(dd.workgroups) + " workgroups × " + dd.waves_per_workgroup + " waves" : null;
    s.appendChild(el("p", { class: "subtitle muted", id: "subtitle", text: [tgt, "dispatch " + (c.dispatch_id === null ? "n/a" : c.dispatch_id), grid,
      fmtInt(c.waves) + " traced waves", dd.duration_ns ? fmtNs(dd.duration_ns) : null].filter(Boolean).join(" · ") }));

    var v = verdict();
    var box = el("div", { class: "verdict", id: "verdict", data: { from: v.from, kind: v.kind || "" } },
      el("div", { class: "verdict-label", text: "Verdict" + (v.kind ? " · " + v.kind : "") }),
      el("p", { class: "verdict-sentence", id: "verdict-sentence", text: v.sentence }));
    if (v.numbers && typeof v.numbers === "object" && Object.keys(v.numbers).length) {
      box.appendChild(el("div", { class: "verdict-numbers", id: "verdict-numbers", text: fmtEvidence("numbers", v.numbers) }));
    }
    s.appendChild(box);

    var top = P.findings.filter(function (f) { return f.kind !== "capture"; }).slice(0, 3);
    if (top.length) {
      var ol = el("ol", { class: "top-findings", id: "top-findings" });
      top.forEach(function (f) {
        var i = P.findings.indexOf(f) + 1;
        ol.appendChild(el("li", { data: { rule: f.rule } }, el("span", { class: "sev sev-" + f.severity, text: f.severity }), " ",
          el("a", { href: "#finding-" + i, text: f.title }), el("span", { class: "muted", text: " — " + stakeAndPrediction(f) + " [" + f.rule + "]" })));
      });
      s.appendChild(el("h3", { text: "Top findings" }));
      s.appendChild(ol);
    }

    var T = A.totals, st = W.states, o = A.occupancy, bw = P.bandwidth, share = bandwidthShare(bw);
    s.appendChild(el("div", { class: "cards", id: "key-numbers" },
      card("key-total-cycles", fmtInt(H.total_cycles), "total cycles (latency + idle, all traced waves)"),
      card("key-instr-stall", fmtStallPct(T.stall_share_of_latency), "instruction stall: share of latency (code.json Stall)", STALL_TERMS),
      card("key-wave-stall", fmtPct(st.share.STALL), "STALL wave state: share of wave time", STALL_TERMS),
      card("key-occupancy", (o.theoretical_waves_per_simd === null ? "n/a" : o.theoretical_waves_per_simd) + " / " + (o.observed_max_waves_per_simd_traced_cu === null ? "n/a" : o.observed_max_waves_per_simd_traced_cu),
        "waves per SIMD: theoretical" + (o.limiters && o.limiters.length ? " (limit " + o.limiters.join(", ") + ")" : "") + " / observed peak"),
      card("key-duration", dd.duration_ns ? fmtNs(dd.duration_ns) : "unknown", "dispatch duration", dd.duration_source || "no kernel trace row for this dispatch"),
      card("key-bandwidth", share === null ? "unknown" : share, share === null ? "HBM bandwidth: " + ((bw && bw.reason) || "unavailable") :
        "of the " + fmtInt(bw.peak_gbps) + " GB/s HBM peak: " + fmtInt(bw.achieved_gbps) + " GB/s, " + (bw.source === "pmc" ? "counters" : "trace estimate"), bw && bw.peak_source)));
    s.appendChild(el("p", { class: "muted stall-terms", id: "stall-terms", text: STALL_TERMS }));

    var nw = notesAndWarnings();
    if (nw.warnings.length) {
      s.appendChild(el("h3", { text: "Warnings" }));
      s.appendChild(el("ul", { class: "warnings", id: "warnings" }, nw.warnings.map(function (w) { return el("li", { text: w }); })));
    }
    if (nw.notes.length) {
      s.appendChild(el("h3", { text: "Notes" }));
      s.appendChild(el("ul", { class: "notes", id: "notes" }, nw.notes.map(function (w) { return el("li", { text: w }); })));
    }
    renderCaptureFacts(s);
  }
  function renderCaptureFacts(s) {
    var c = A.capture, t = A.target, q = A.quality;
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
    var dd = P.dispatch || {};
    if (dd.grid_source) facts.push(["grid", (dd.workgroups ? fmtInt(dd.workgroups) + " workgroups of " + dd.workgroup_size + " threads (" + dd.waves_per_workgroup + " waves)" : "unknown") + " — " + dd.grid_source]);
    if (dd.duration_source) facts.push(["duration", fmtNs(dd.duration_ns) + " — " + dd.duration_source]);
    var pcs = A.pc_sampling;
    if (pcs) {
      var jn = pcs.join, sm = pcs.samples;
      facts.push(["PC samples", jn.mode === "none" ? "not joined: " + jn.reason :
        fmtInt(sm.joined) + " of " + fmtInt(sm.in_file) + " joined (" + jn.mode + ", scope " + jn.scope + ", confidence " + jn.confidence.toFixed(2) + ")" +
        (pcs.stalled ? "; stalled: " + lineMix({ samples: sm.joined, stalled: pcs.stalled, reasons: pcs.reasons }) : "")]);
    }
    var dl = el("dl", { class: "facts", id: "capture-facts" });
    facts.forEach(function (f) { dl.appendChild(el("dt", { text: f[0] })); dl.appendChild(el("dd", { text: f[1] })); });
    s.appendChild(el("details", { class: "capture-details", id: "capture-details" }, el("summary", { text: "Capture details (target, paths, clock, decoder" + (pcs ? ", PC samples" : "") + ")" }), dl));
  }

  // ------------------------------------------------------------------ cycles, stalls and occupancy
  function renderHeadline() {
    var s = section("headline"), T = A.totals;
    var cards = el("div", { class: "cards" });
    add(cards, [
      card("hl-total-cycles", fmtInt(H.total_cycles), "traced wave-cycles (latency + idle, summed over the traced waves)"),
      card("hl-latency", fmtInt(T.latency), "latency cycles (Σ instruction durations)"),
      card("hl-stall", fmtStall(T.stall), "instruction stall cycles (code.json Stall)", STALL_TERMS),
      card("hl-stall-share", fmtStallPct(T.stall_share_of_latency), "instruction stall, share of latency", STALL_TERMS),
      card("hl-idle", fmtInt(T.idle), "idle cycles (gaps between instructions)"),
      card("hl-issue", fmtStall(T.issue), "issue cycles (latency − instruction stall)")
    ]);
    if (A.latency_hiding) cards.appendChild(card("hl-hidden", fmtPct(A.latency_hiding.hidden_share), "hidden by other waves' work"));
    s.appendChild(cards);

    var grid = el("div", { class: "grid2" });
    var left = el("div"), right = el("div");
    grid.appendChild(left); grid.appendChild(right);
    s.appendChild(grid);

    // instruction stall by class: SVG bar chart + table
    left.appendChild(el("h3", { text: "Instruction stall by class" }));
    var rows = (A.stall_by_class || []).filter(function (r) { return r.stall > 0; });
    var maxS = rows.reduce(function (m, r) { return Math.max(m, r.stall); }, 1);
    var bh = 20, lw = 130, vw = 170, cw = 560, ch = rows.length * bh + 6;
    var chart = svg("svg", { id: "stall-chart", viewBox: "0 0 " + cw + " " + ch, width: "100%", role: "img", "aria-label": "instruction stall cycles by class" });
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
    if (!STALL_OK) left.appendChild(el("p", { class: "muted", id: "stall-unrecorded", text: STALL_NOTE + " The table gives latency by class." }));
    else if (!rows.length) left.appendChild(el("p", { class: "muted", text: "No instruction stall cycles." }));
    else left.appendChild(chart);
    left.appendChild(table(
      [{ label: "class" }, { label: "stall", num: 1, title: "instruction stall cycles" }, { label: "share", num: 1 }, { label: "latency", num: 1 }, { label: "latency share", num: 1 }, { label: "records", num: 1 }],
      (A.stall_by_class || []).map(function (r) {
        return { attrs: { data: { cls: r.class }, title: r.description }, cells: [
          el("span", null, el("span", { class: "swatch", style: { background: classColor(r.class) } }), r.class),
          fmtStall(r.stall), fmtStallPct(r.stall_share), fmtInt(r.latency), fmtPct(r.latency_share), fmtInt(r.records)] };
      }), { id: "stall-by-class" }));

    // wave states
    right.appendChild(el("h3", { text: "Wave states (the decoder's wave-state timeline; all traced waves, weighted by lifetime)" }));
    var st = W.states, names = ["EXEC", "WAIT", "STALL", "IDLE"];
    var bar = el("div", { class: "hbar", id: "state-bar" });
    names.forEach(function (n) {
      var sh = st.share[n] || 0;
      if (sh > 0) bar.appendChild(el("div", { title: n + " " + fmtPct(sh), style: { width: (100 * sh) + "%", background: STATE_COLORS[n] } }));
    });
    right.appendChild(bar);
    right.appendChild(table([{ label: "wave state" }, { label: "cycles", num: 1 }, { label: "share of wave time", num: 1 }],
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
  function renderFindings() {
    var s = section("findings");
    if (!P.findings.length) s.appendChild(el("p", { id: "no-findings", text: "No rule fired: no pattern above its threshold." }));
    P.findings.forEach(function (f, i) {
      var art = el("article", { class: "finding", id: "finding-" + (i + 1), data: { rule: f.rule } },
        el("h3", null, (i + 1) + ". ", el("span", { class: "sev sev-" + f.severity, text: f.severity }), " ", f.title),
        el("div", { class: "meta", text: "rule " + f.rule + " · " + stakeText(f) + " · confidence " + fmtNum(f.confidence, 2) }));
      var pred = predictedText(f.predicted);
      if (pred) {
        art.appendChild(el("div", { class: "predicted", data: { expressible: String(!!f.predicted.expressible) } }, el("b", { text: "What-if: " }), pred));
      }
      var ev = el("div", { class: "evidence" }, renderEvidence(f.evidence));
      var extra = el("dl");
      var lp = loopsText(f), lg = ledgerText(f);
      if (lp) { extra.appendChild(el("dt", { text: "loops" })); extra.appendChild(el("dd", { text: lp })); }
      if (lg) { extra.appendChild(el("dt", { text: "cycle ledger" })); extra.appendChild(el("dd", { text: lg })); }
      (f.preconditions || []).forEach(function (c) {
        extra.appendChild(el("dt", { text: c.holds === false ? "does not hold" : "checked" }));
        extra.appendChild(el("dd", { text: c.text + " — " + c.detail }));
      });
      if (extra.childNodes.length) ev.appendChild(extra);
      art.appendChild(ev);
      art.appendChild(el("p", null, el("b", { text: "Change: " }), f.change));
      art.appendChild(el("p", null, el("b", { text: "Would prove it wrong: " }), f.falsify));
      s.appendChild(art);
    });
    Object.keys(P.rule_errors || {}).forEach(function (r) {
      s.appendChild(el("p", { class: "warn", text: "rule " + r + " failed: " + P.rule_errors[r] }));
    });
  }
