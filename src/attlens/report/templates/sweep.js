/* attlens sweep dashboard. Plain JavaScript, no library, no network.
   Every string from a trace or a sweep file is put in the page with
   textContent, never parsed as HTML. */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("attlens-data").textContent);
  var ROWS = DATA.rows;
  var CLASS_COLORS = {
    wait_global: "#d64545", wait_lds: "#f08c2e", wait_smem: "#c9a227", wait_unresolved: "#a47474",
    barrier: "#8e44ad", vmem_load: "#1f77b4", vmem_store: "#5aa9e0", vmem_atomic: "#17becf",
    lds: "#2ca02c", lds_crosslane: "#98d27a", mfma: "#e377c2", valu: "#3949ab", salu: "#8c8c8c",
    smem: "#bcbd22", branch: "#8c564b", hazard: "#cfcfcf", message: "#aec7e8", kernel_end: "#505050",
    other: "#9e9e9e"
  };
  var HEALTH_RANK = { ok: 0, warn: 1, bad: 2 };

  function node(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function append(parent) {
    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);
    return parent;
  }
  function pct(x) { return x === null || x === undefined ? "" : (100 * x).toFixed(1) + "%"; }
  function num(x, nd) { return x === null || x === undefined ? "" : Number(x).toFixed(nd); }
  function sum(r) { return r.summary || {}; }

  // ------------------------------------------------------------------ words
  function int(n) { return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function badge(cls, text, title) { var b = node("span", cls, text); if (title) b.title = title; return b; }
  function sub(text) { return node("div", "sub", text); }
  // the grid as attlens analyze and plan count it: workgroups of so many threads
  function gridText(s) {
    if (!s.grid || !s.workgroup) return null;
    var wgs = 1, threads = 1;
    for (var i = 0; i < s.grid.length; i++) { wgs *= Math.ceil(s.grid[i] / (s.workgroup[i] || 1)); threads *= s.workgroup[i] || 1; }
    return int(wgs) + " workgroup" + (wgs === 1 ? "" : "s") + " × " + int(threads) + " threads";
  }
  function durationText(s) {
    if (s.duration_us === null || s.duration_us === undefined) return null;
    var us = Number(s.duration_us);
    return us >= 1 ? us.toFixed(2).replace(/\B(?=(\d{3})+(?!\d))/g, ",") + " µs" : int(us * 1000) + " ns";
  }
  // where the duration came from, in a few words: this dispatch (as attlens plan shows it), or a mean of others
  function durationSource(s) {
    var src = s.duration_source || "";
    if (!src) return "";
    if (/mean|median|average/i.test(src)) return "not this dispatch: " + src;
    return "this dispatch";
  }
  var HEALTH_TEXT = { ok: "capture ok", warn: "capture: check", bad: "capture: bad" };
  var HEALTH_WHY = { ok: "capture health: no capture finding, complete input", warn: "capture health: a capture finding or a noisy pair of dispatches (listed below)", bad: "capture health: partial input or a HIGH capture finding (listed below)" };

  // ------------------------------------------------------------------ columns
  // value: the sort key (null sorts last); cell: fills the <td>. Columns hold
  // several facts each (kernel with its grid and target, stall with its mix)
  // so that the table fits a 1,366 px window without sideways scrolling.
  var COLUMNS = [
    { key: "job", label: "job", width: "13%", value: function (r) { return r.job; }, cell: function (td, r) {
      if (r.href) { var a = node("a", "report-link", r.job); a.setAttribute("href", r.href); td.appendChild(a); }
      else td.appendChild(node("span", null, r.job));
      if (r.tags && r.tags.length) td.appendChild(sub(r.tags.join(", ")));
      if (r.log && r.state !== "done") { var l = node("a", "log-link", "log"); l.setAttribute("href", r.log); td.appendChild(append(node("div", "sub"), l)); }
    } },
    { key: "kernel", label: "kernel · grid · target", width: "17%", value: function (r) { return sum(r).kernel || null; }, cell: function (td, r) {
      var s = sum(r);
      if (s.kernel) td.appendChild(node("div", "kname", s.kernel));
      var shape = s.shape || r.shape_label, grid = gridText(s);
      if (shape && (!grid || shape.indexOf("grid ") !== 0)) td.appendChild(node("div", "shape", shape));
      if (grid) td.appendChild(node("div", "sub grid", grid));
      if (s.target) td.appendChild(sub(s.target));
    } },
    { key: "duration_us", label: "duration", num: true, width: "8%", value: function (r) { return nz(sum(r).duration_us); }, cell: function (td, r) {
      var s = sum(r), t = durationText(s);
      if (!t) return;
      td.appendChild(node("span", "dur", t));
      td.appendChild(sub(durationSource(s)));
      td.title = (s.duration_source || "") + (r.reproduce ? "\nthe same as: " + r.reproduce : "");
    } },
    { key: "stall_share", label: "instruction stall", num: true, left: true, width: "14%", value: function (r) { return nz(sum(r).stall_share); }, cell: function (td, r) {
      var s = sum(r), mix = s.stall_mix || {}, bar = node("div", "mix");
      if (s.stall_share === null || s.stall_share === undefined) return;
      td.appendChild(node("div", null, pct(s.stall_share) + " of latency"));
      (DATA.class_order || Object.keys(mix)).forEach(function (c) {
        if (!mix[c]) return;
        var seg = node("span"); seg.style.width = (100 * mix[c]) + "%"; seg.style.background = CLASS_COLORS[c] || "#9e9e9e";
        seg.title = c + " " + pct(mix[c]); seg.dataset.cls = c; bar.appendChild(seg);
      });
      td.appendChild(bar);
      if (s.dominant_class) td.appendChild(sub("most: " + s.dominant_class + ", " + pct(s.dominant_class_share) + " of stall"));
    } },
    { key: "occupancy", label: "occupancy", num: true, width: "8%", value: function (r) { return nz((sum(r).occupancy || {}).theoretical); }, cell: function (td, r) {
      var o = sum(r).occupancy || {};
      if (o.theoretical == null && o.observed == null) return;
      td.appendChild(node("span", "occ", (o.theoretical == null ? "n/a" : o.theoretical) + " / " + (o.observed == null ? "n/a" : o.observed)));
      if (o.limiters && o.limiters.length) td.appendChild(sub("limit " + o.limiters.join(", ")));
    } },
    { key: "top_finding", label: "top finding", num: true, left: true, width: "20%", value: function (r) { var f = sum(r).top_finding; return f ? nz(f.share) : null; }, cell: function (td, r) {
      var f = sum(r).top_finding;
      if (r.state !== "done" && r.error) { td.appendChild(node("span", "err", r.error)); return; }
      if (!f) { if (r.summary && r.summary.att_available) td.appendChild(node("span", "muted", "no performance rule fired")); return; }
      append(td, badge("sev sev-" + f.severity, f.severity, "severity " + f.severity), document.createTextNode(" " + f.title + " "), node("code", null, "[" + f.rule + "]"));
      if (f.share !== null) td.appendChild(sub(pct(f.share) + " of traced wave-cycles at stake"));
      if (f.predicted_text) td.appendChild(sub(f.predicted_text));
    } },
    { key: "bandwidth_fraction", label: "HBM bandwidth", num: true, width: "8%", value: function (r) { return nz(sum(r).bandwidth_fraction); }, cell: function (td, r) {
      var s = sum(r);
      if (s.bandwidth_fraction === null || s.bandwidth_fraction === undefined) {
        if (s.att_available) { td.appendChild(node("span", "muted", "unknown")); td.title = "the bytes moved, the dispatch duration or the peak bandwidth is not known"; }
        return;
      }
      td.appendChild(node("span", "bw", s.bandwidth_text || pct(s.bandwidth_fraction)));
      td.appendChild(sub("of peak"));
      td.title = (s.bandwidth_source || "") + (r.reproduce ? "\nthe same as: " + r.reproduce : "");
    } },
    { key: "status", label: "status", width: "12%", value: function (r) { var h = sum(r).health; return (h ? 10 * HEALTH_RANK[h.status] : 0) + (r.state === "done" ? 0 : 100); }, cell: function (td, r) {
      td.appendChild(badge("state state-" + r.state, r.state, "job state" + (r.attempts != null ? ", " + r.attempts + " attempt" + (r.attempts === 1 ? "" : "s") : "")));
      var h = sum(r).health;
      if (h) {
        td.appendChild(document.createTextNode(" "));
        td.appendChild(badge("health health-" + h.status, HEALTH_TEXT[h.status] || h.status, HEALTH_WHY[h.status]));
        if (h.issues && h.issues.length) td.appendChild(sub(h.issues.join("; ")));
        if (h.notes && h.notes.length) td.lastChild.title = h.notes.length + " analysis note(s): " + h.notes.join(" | ");
      }
    } }
  ];
  function nz(x) { return x === undefined ? null : x; }

  // ------------------------------------------------------------------ header
  function renderHeader() {
    var h = document.getElementById("header"), m = DATA.meta || {}, c = m.counts || {};
    h.appendChild(node("h1", null, DATA.title));
    var parts = [ROWS.length + " job(s)"];
    ["done", "failed", "running", "pending"].forEach(function (k) { if (c[k]) parts.push(c[k] + " " + k); });
    h.appendChild(node("p", "muted", parts.join(" · ") + " — " + (m.source === "sweep" ? "sweep folder " : "captures under ") + m.dir +
      (m.sweep_file ? " (sweep file " + m.sweep_file + ")" : "") + ". Generated by attlens " + DATA.attlens_version + "."));
    h.appendChild(node("p", "muted", "Duration: the traced dispatch's own, as attlens plan shows it (a mean of the kernel's other dispatches only when the capture has none, and then marked). " +
      "Instruction stall: share of latency (code.json stall cycles), the bar its mix by class over all traced waves. Occupancy: theoretical waves per SIMD / observed peak on the traced CU. " +
      "HBM bandwidth: achieved fraction of peak as attlens plan states it (≤ when the trace estimate counts re-reads). Hover a duration or a bandwidth for the attlens plan command that gives the same numbers (a sweep job's capture is read with its discovery run's outputs). Grid in workgroups, as attlens analyze counts them. Click a column to sort."));
    var legend = node("div", "legend");
    (DATA.class_order || []).forEach(function (c) {
      var used = ROWS.some(function (r) { return (sum(r).stall_mix || {})[c]; });
      if (!used) return;
      var sw = node("span", "swatch"); sw.style.background = CLASS_COLORS[c] || "#9e9e9e";
      append(legend, append(node("span"), sw, document.createTextNode(c)));
    });
    h.appendChild(legend);
  }

  // ------------------------------------------------------------------ table
  var sortKey = null, sortDir = 1;
  function renderTable() {
    var sec = document.getElementById("jobs");
    var controls = node("div", "controls");
    var filter = node("input"); filter.type = "search"; filter.id = "sweep-filter"; filter.placeholder = "filter: job, kernel, shape, tag";
    var count = node("span", "muted"); count.id = "sweep-count";
    append(controls, filter, count);
    sec.appendChild(controls);
    var table = node("table", "data"); table.id = "sweep-table";
    var thead = node("thead"), tr = node("tr");
    COLUMNS.forEach(function (col) {
      var th = node("th", (col.num && !col.left ? "num " : "") + "col-" + col.key, col.label); th.dataset.key = col.key;
      if (col.width) th.style.width = col.width;
      th.addEventListener("click", function () { sortBy(col.key); });
      tr.appendChild(th);
    });
    thead.appendChild(tr); table.appendChild(thead);
    var tbody = node("tbody");
    ROWS.forEach(function (r, i) {
      var row = node("tr", r.state); row.dataset.job = r.job; row.dataset.index = String(i);
      COLUMNS.forEach(function (col) {
        var td = node("td", (col.num && !col.left ? "num " : "") + "col-" + col.key);
        td.dataset.key = col.key;
        var v = col.value(r);
        td.dataset.value = JSON.stringify(v === undefined ? null : v);
        col.cell(td, r);
        row.appendChild(td);
      });
      tbody.appendChild(row);
    });
    table.appendChild(tbody);
    sec.appendChild(table);
    function applyFilter() {
      var q = filter.value.trim().toLowerCase(), shown = 0;
      [].forEach.call(tbody.rows, function (row) {
        var r = ROWS[Number(row.dataset.index)], s = sum(r);
        var hay = [r.job, s.kernel, s.shape, r.shape_label].concat(r.tags || []).join(" ").toLowerCase();
        row.hidden = q !== "" && hay.indexOf(q) < 0;
        if (!row.hidden) shown++;
      });
      count.textContent = shown + " of " + ROWS.length + " shown";
    }
    filter.addEventListener("input", applyFilter);
    applyFilter();

    function sortBy(key) {
      sortDir = sortKey === key ? -sortDir : (COLUMNS.filter(function (c) { return c.key === key; })[0].num ? -1 : 1);
      sortKey = key;
      var col = COLUMNS.filter(function (c) { return c.key === key; })[0];
      var rows = [].slice.call(tbody.rows);
      rows.sort(function (a, b) {
        var va = col.value(ROWS[Number(a.dataset.index)]), vb = col.value(ROWS[Number(b.dataset.index)]);
        if (va === null || va === undefined) return (vb === null || vb === undefined) ? Number(a.dataset.index) - Number(b.dataset.index) : 1;
        if (vb === null || vb === undefined) return -1;
        var d = typeof va === "number" && typeof vb === "number" ? va - vb : String(va).localeCompare(String(vb));
        return d !== 0 ? sortDir * d : Number(a.dataset.index) - Number(b.dataset.index);
      });
      rows.forEach(function (r) { tbody.appendChild(r); });
      [].forEach.call(thead.querySelectorAll("th"), function (th) {
        if (th.dataset.key === key) th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
        else th.removeAttribute("aria-sort");
      });
    }
  }

  // ------------------------------------------------------------------ findings
  function renderFindings() {
    var sec = document.getElementById("findings");
    var analyzed = ROWS.filter(function (r) { return r.summary && r.summary.att_available; }).length;
    (DATA.categories || []).forEach(function (cat) {
      var box = node("div", "category"); box.dataset.category = cat.id;
      box.appendChild(node("h3", null, cat.title + " (" + cat.jobs.length + ")"));
      box.appendChild(node("p", "muted", cat.meaning + "."));
      if (!cat.rules.length) box.appendChild(node("p", "muted", "No rule of this attlens detects this yet, so this list is empty whatever the kernels do."));
      else if (!cat.jobs.length) box.appendChild(node("p", null, "None of the " + analyzed + " analyzed kernel(s) (rules: " + cat.rules.join(", ") + ")."));
      else {
        var ul = node("ul");
        cat.jobs.forEach(function (j) {
          var li = node("li");
          append(li, node("b", null, j.job), document.createTextNode(" — " + (j.kernel || "") + ": "), badge("sev sev-" + j.severity, j.severity, "severity " + j.severity),
            document.createTextNode(" " + j.title + " "), node("code", null, "[" + j.rule + "]"));
          ul.appendChild(li);
        });
        box.appendChild(ul);
      }
      sec.appendChild(box);
    });
  }

  renderHeader();
  renderTable();
  renderFindings();
  window.attlensSweep = { data: DATA };
  document.body.dataset.ready = "1";
})();
