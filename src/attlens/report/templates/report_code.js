  // ------------------------------------------------------------------ source + ISA
  var ISA = DATA.isa, SRC = DATA.source, DEPS = DATA.deps;
  var nIsa = ISA.pc.length;
  // PC sampling (docs/pcsampling.md): per listed instruction the samples and
  // why the sampled waves stalled, beside the trace's cycles (null: none joined)
  var PCS = ISA.pc_samples || null;
  if (PCS) {
    ISA.pcs_samples = PCS.samples;
    ISA.pcs_why = PCS.samples.map(function (n, i) {
      if (!n) return null;  // null sorts last
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
    selectionChanged();
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
    selectionChanged();
  }
  var selectionHooks = [];
  function selectionChanged() { selectionHooks.forEach(function (f) { f(state.pc); }); }

  function renderDeps(pc) {
    depsPanel.textContent = "";
    var r = rowOfPc[pc];
    add(depsPanel, el("div", null, el("b", { text: "pc " + pc + ": " }), el("code", { text: isaText(pc) }),
      r !== undefined ? el("span", { class: "muted", text: "  " + (ISA.source[r] || "(no source)") }) : null));
    var waits = DEPS.waits[pc], prod = DEPS.producers[pc], waiters = waitersOf[pc];
    if (waits && waits.length) {
      var tot = waits.reduce(function (s, x) { return s + x[1]; }, 0);
      depsPanel.appendChild(el("div", { text: "This wait waited on " + waits.length + " memory op(s) (green: this wait, red: its producers; arrows in the gutter run from each to the wait):" }));
      depsPanel.appendChild(table([{ label: "producer" }, { label: "instruction" }, { label: "cycles charged", num: 1 }, { label: "share", num: 1 }],
        waits.slice(0, 20).map(function (x) { return [pcRef(x[0]), el("code", { text: isaText(x[0]) }), fmtStall(x[1]), fmtStallPct(tot ? x[1] / tot : null)]; }), { id: "deps-producers" }));
    }
    if (prod || (waiters && waiters.length)) {
      if (prod) depsPanel.appendChild(el("div", { text: "Memory op waited on " + (STALL_OK ? "for " + fmtInt(prod.waited) + " cycles " : "(cycles not recorded) ") + "(" + prod.class + ") over " + fmtInt(prod.pairs) +
        " waits; load-to-use distance median " + fmtNum(prod.dist_instr_median, 0) + " instructions / " + fmtInt(prod.dist_cycles_median) + " cycles; " + fmtNum(prod.outstanding_mean, 1) + " ops outstanding on average." }));
      if (waiters && waiters.length) {
        depsPanel.appendChild(el("div", { text: "Waits that waited on it (green):" }));
        depsPanel.appendChild(table([{ label: "wait" }, { label: "instruction" }, { label: "cycles charged", num: 1 }],
          waiters.slice(0, 20).map(function (x) { return [pcRef(x[0]), el("code", { text: isaText(x[0]) }), fmtStall(x[1])]; }), { id: "deps-waits" }));
      }
    }
    if (!(waits && waits.length) && !prod && !(waiters && waiters.length)) {
      depsPanel.appendChild(el("div", { class: "muted", text: "No memory → wait dependency through this instruction." }));
    }
  }
  function renderDepsForLine(li) {
    depsPanel.textContent = "";
    var ln = SRC.lines[li];
    add(depsPanel, el("div", null, el("b", { text: ln.key }), "  " + ln.pcs.length + " instruction(s), " + ln.executed + " executed; instruction stall " + fmtInt(ln.stall) + ", latency " + fmtInt(ln.latency) +
      (ln.dominant_class ? ", mostly " + ln.dominant_class : "")));
    (ln.inline_chains || []).forEach(function (c) { depsPanel.appendChild(el("div", { class: "muted", text: "inlined at: " + c })); });
    depsPanel.appendChild(el("div", { class: "muted", text: "Click an instruction for its memory → wait dependencies." }));
  }

  // The ISA table fits its pane: the instruction text takes what the other
  // columns leave and wraps between operands (a mnemonic or an operand is
  // never split, nothing is cut). The source view gets its default width
  // (SRC_TEXT_SHARE of the row when the capture holds source text, else
  // SRC_REF_SHARE, less when the ISA table would lose a column or INS_MORE
  // px of text: its rows are then file:line only; never under SRC_MIN) or the width the splitter
  // gave it; when the ISA table cannot fit beside it at its narrowest (every
  // column, the text at its longest piece and INS_MIN px), the optional
  // columns give way, in the order of GIVE_WAY (they are listed above the
  // table), then the source view narrows down to SRC_MIN, then the two stack.
  var SRC_MIN = 320, INS_MIN = 200, INS_MORE = 120, SRC_TEXT_SHARE = 0.45, SRC_REF_SHARE = 0.3;
  // The sampled reasons (pcs_why, the widest) go before waited on (the arrows
  // show it too) and stay in the samples cell's tooltip; the sample count
  // (narrow, the one to sort by) goes last.
  var GIVE_WAY = ["source", "idle", "exposed", "pcs_why", "waited_on", "pcs_samples"];
  function fitSplit(grid, left, splitter, table, cols, hiddenNote) {
    var userWidth = null, drag = null, minCache = {};
    var optional = GIVE_WAY.filter(function (k) { return cols.some(function (c) { return c.key === k; }); });
    var hasText = SRC.files.some(function (f) { return f.text; });
    function hide(n) {
      optional.forEach(function (k, j) { table.classList.toggle("hide-" + k, j < n); });
    }
    function isaMin(n) {
      // the table's narrowest width with the first n optional columns hidden: one
      // measurement at min-content with every column shown (a column's narrowest
      // width does not depend on the others'), then minus the hidden ones
      if (minCache.all === undefined) {
        var w0 = table.style.width, shown = hidden;
        hide(0);
        table.style.width = "min-content";
        minCache.all = table.getBoundingClientRect().width + 4;
        minCache.col = {};
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { minCache.col[th.dataset.key] = th.getBoundingClientRect().width; });
        table.style.width = w0;
        hide(shown);
      }
      var w = minCache.all;
      for (var j = 0; j < n; j++) w -= minCache.col[optional[j]] || 0;
      return Math.ceil(w);
    }
    function gapWidth() { return splitter.getBoundingClientRect().width + 2 * (parseFloat(getComputedStyle(grid).columnGap) || 0); }
    var hidden = 0;
    function layout() {
      var total = grid.clientWidth, gap = gapWidth();
      var want = userWidth !== null ? userWidth : hasText ? total * SRC_TEXT_SHARE : Math.min(total * SRC_REF_SHARE, total - gap - isaMin(0) - INS_MORE);
      want = Math.max(SRC_MIN, want);
      want = Math.max(SRC_MIN, Math.min(want, total - gap - isaMin(optional.length)));
      var n = 0;
      while (n < optional.length && total - gap - want < isaMin(n)) n++;
      var src = Math.min(want, total - gap - isaMin(n));
      var stacked = src < SRC_MIN;
      grid.classList.toggle("stacked", stacked);
      hidden = stacked ? 0 : n;
      hide(hidden);
      grid.style.setProperty("--isa-min", isaMin(hidden) + "px");
      if (!stacked) grid.style.setProperty("--src-w", Math.floor(src) + "px");
      var names = optional.slice(0, hidden).map(function (k) { return cols.filter(function (c) { return c.key === k; })[0].label; });
      hiddenNote.textContent = hidden ? "Hidden to fit: " + names.join(", ") + " (drag the splitter left to show them)" : "";
      if (typeof scheduleArrows === "function") scheduleArrows();
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
    api.relayoutCode = function () { minCache = {}; layout(); };
    api.codeLayout = function () {
      return { stacked: grid.classList.contains("stacked"), isaMin: isaMin(hidden), srcWidth: left.getBoundingClientRect().width,
        hidden: optional.slice(0, hidden) };
    };
  }

  function renderCode() {
    var s = section("code");
    s.appendChild(el("p", { class: "muted", text: "Heat bars: red = instruction stall, blue = latency, relative to the hottest line. Click a source line to expand it and highlight its instructions in the ISA view; click an instruction to select its line and list the memory ops it waited on (or the waits that waited on it); arrows in the ISA gutter run from each memory instruction to the wait that waited on it (from the waves' waitcnt data, all traced waves). Drag the bar between the views to resize them, the bottom edge of a view to make it taller." }));
    // source | splitter | ISA: the splitter resizes the two panes (drag, or arrow keys)
    var grid = el("div", { class: "split", id: "code-split" });
    s.appendChild(grid);

    // --- source view
    var left = el("div");
    var metricSel = el("select", { id: "src-metric" }, STALL_OK ? el("option", { value: "stall", text: "instruction stall" }) : null, el("option", { value: "latency", text: "latency" }),
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
    var allArrows = el("input", { type: "checkbox", id: "arrows-all" });
    var count = el("span", { class: "muted", id: "isa-count" }), hiddenNote = el("span", { class: "muted", id: "isa-hidden" });
    right.appendChild(el("div", { class: "controls" }, filter, clsSel, el("label", null, execOnly, " executed only"),
      el("label", { title: "draw the memory → wait arrows of every wait whose row is in view, not only of the selected instruction" }, allArrows, " arrows for all waits in view"), count, hiddenNote));
    isaPane = el("div", { class: "pane", id: "isa-pane" });
    right.appendChild(isaPane);
    depsPanel = el("div", { id: "deps-panel" }, el("span", { class: "muted", text: "Select an instruction or a source line." }));
    right.appendChild(depsPanel);
    grid.appendChild(right);

    var hasExposed = ISA.exposed !== null;
    var cols = [
      { key: "gutter", label: "", title: "memory → wait arrows" }, { key: "pc", label: "pc", num: 1 }, { key: "text", label: "instruction" }, { key: "cls", label: "class" },
      { key: "hit", label: "hit", num: 1 }, { key: "latency", label: "latency", num: 1 }, { key: "stall", label: "stall", num: 1 },
      { key: "idle", label: "idle", num: 1 }];
    if (hasExposed) cols.push({ key: "exposed", label: "exposed", num: 1, title: "idle + latency not hidden by other waves' work" });
    cols.push({ key: "waited_on", label: "waited on", num: 1, title: "wait cycles other instructions spent waiting for this memory op" });
    if (PCS) {
      cols.push({ key: "pcs_samples", label: "samples", num: 1, title: "PC samples at this instruction" });
      cols.push({ key: "pcs_why", label: "sampled why", title: "why the sampled waves did not issue: share of the stalled samples per reason" });
    }
    cols.push({ key: "source", label: "source" });
    cols.forEach(function (c) { if (c.key === "stall") c.title = "instruction stall: cycles the instruction waited before it issued (code.json Stall)"; });
    var maxStall = Math.max.apply(null, ISA.stall.concat([1]));
    var t = el("table", { class: "data", id: "isa-table" });
    var hr = el("tr");
    cols.forEach(function (c) {
      if (c.key === "gutter") { hr.appendChild(el("th", { class: "gut", title: c.title, data: { key: c.key } })); return; }
      hr.appendChild(el("th", { class: (c.num ? "num " : "") + "c-" + c.key, text: c.label, title: c.title || "sort by " + c.label, data: { key: c.key }, onclick: function () { sortBy(c.key); } }));
    });
    t.appendChild(el("thead", null, hr));
    var tb = el("tbody");
    for (var i = 0; i < nIsa; i++) {
      var pc = ISA.pc[i], cls = ISA.classes[ISA.cls[i]];
      var tr = el("tr", { class: "isa-row" + (ISA.hit[i] ? "" : " unexec"), data: { pc: pc } });
      tr.appendChild(el("td", { class: "gut" }));
      tr.appendChild(el("td", { class: "num", text: pc, title: ISA.vaddr[i] === null ? "no address in this capture layout" : "address 0x" + ISA.vaddr[i].toString(16) }));
      tr.appendChild(el("td", { class: "ins", text: ISA.text[i] }));
      tr.appendChild(el("td", null, el("span", { class: "swatch", style: { background: classColor(cls) } }), cls));
      tr.appendChild(el("td", { class: "num", text: fmtInt(ISA.hit[i]) }));
      tr.appendChild(el("td", { class: "num", text: fmtInt(ISA.latency[i]) }));
      var sc = el("td", { class: "num heatcell", text: fmtStall(ISA.stall[i]) });
      if (STALL_OK && ISA.stall[i] > 0) sc.appendChild(el("span", { class: "bar", style: { width: (100 * ISA.stall[i] / maxStall) + "%" } }));
      tr.appendChild(sc);
      tr.appendChild(el("td", { class: "num c-idle", text: fmtInt(ISA.idle[i]) }));
      if (hasExposed) tr.appendChild(el("td", { class: "num c-exposed", text: fmtInt(ISA.exposed[i]) }));
      tr.appendChild(el("td", { class: "num c-waited_on", text: ISA.waited_on[i] ? fmtInt(ISA.waited_on[i]) : "" }));
      if (PCS) {
        tr.appendChild(el("td", { class: "num c-pcs_samples", text: ISA.pcs_samples[i] ? fmtInt(ISA.pcs_samples[i]) : "", title: ISA.pcs_why[i] || null }));
        // one reason per unbreakable piece: the mix wraps between reasons when the pane is narrow
        tr.appendChild(el("td", { class: "c-pcs_why" }, (ISA.pcs_why[i] || "").split(" · ").map(function (part, j) {
          return [j ? " · " : "", part ? el("span", { class: "mix", text: part }) : null];
        })));
      }
      tr.appendChild(el("td", { class: "src c-source", text: shortSource(ISA.source[i]), title: ISA.source[i] || "" }));
      tr.addEventListener("click", (function (p) { return function () { selectPc(p, false); }; })(pc));
      isaRows.push(tr);
      tb.appendChild(tr);
    }
    t.appendChild(tb);
    isaPane.appendChild(t);
    fitSplit(grid, left, splitter, t, cols, hiddenNote);
    initArrows(t, allArrows);

    var sortState = { key: "pc", dir: 1 };
    function sortBy(key) {
      var dir = sortState.key === key ? -sortState.dir : (key === "pc" || key === "text" || key === "cls" || key === "source" || key === "pcs_why" ? 1 : -1);
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
      drawArrows();
    }
    function applyFilter() {
      var q = filter.value.trim().toLowerCase(), c = clsSel.value, ex = execOnly.checked, shown = 0;
      var pcq = /^pc\s*[:=]?\s*(\d+)(?:\s*[-–]\s*(\d+))?$/.exec(q);
      for (var k = 0; k < nIsa; k++) {
        var ok = true;
        if (c && ISA.classes[ISA.cls[k]] !== c) ok = false;
        if (ok && ex && !ISA.hit[k]) ok = false;
        if (ok && q) {
          if (pcq) ok = pcq[2] === undefined ? ISA.pc[k] === Number(pcq[1]) : ISA.pc[k] >= Number(pcq[1]) && ISA.pc[k] <= Number(pcq[2]);
          else ok = ISA.text[k].toLowerCase().indexOf(q) >= 0 || (ISA.source[k] || "").toLowerCase().indexOf(q) >= 0 ||
            ISA.classes[ISA.cls[k]].indexOf(q) >= 0 || String(ISA.pc[k]) === q;
        }
        isaRows[k].hidden = !ok;
        if (ok) shown++;
      }
      count.textContent = shown + " of " + nIsa + " instructions";
      drawArrows();
    }
    api.filterIsa = function (q) { filter.value = q; applyFilter(); };
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
        var row = el("div", { class: "src-row" + (ln ? " mapped" : " dim"), title: ln ? ln.key + ": instruction stall " + fmtInt(ln.stall) + ", latency " + fmtInt(ln.latency) + ", " + ln.executed + "/" + ln.pcs.length + " instructions executed" + why : null },
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
        var order = SRC.lines.map(function (l, i) { return i; }).filter(function (i) { return SRC.lines[i].hit > 0 || lineValue(SRC.lines[i]) > 0; });
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
          var line = "pc " + pc + "  " + (ISA.stall[r] ? "instruction stall " + fmtCompact(ISA.stall[r]) : "") + "  " + ISA.text[r] +
            (PCS && ISA.pcs_samples[r] ? "  [" + fmtInt(ISA.pcs_samples[r]) + " samples" + (ISA.pcs_why[r] ? ": " + ISA.pcs_why[r] : "") + "]" : "");
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
      s.appendChild(el("h3", { text: STALL_OK ? "Memory ops most waited on (memory → wait)" : "Memory ops waited on (memory → wait; the cycles waited are not recorded by this profiler: rocprofv2)" }));
      s.appendChild(table([{ label: "pc" }, { label: "instruction" }, { label: "class" }, { label: "waited on", num: 1 }, { label: "share", num: 1 }, { label: "waits", num: 1 }, { label: "distance (instr, median)", num: 1 }, { label: "source" }],
        prods.map(function (pc) {
          var p = DEPS.producers[pc], r = rowOfPc[pc];
          return [pcRef(pc), el("code", { text: isaText(pc) }), p.class, fmtStall(p.waited), fmtStallPct(DEPS.total_charged ? p.waited / DEPS.total_charged : null), fmtInt(p.pairs), fmtNum(p.dist_instr_median, 0), r === undefined ? "-" : shortSource(ISA.source[r])];
        }), { id: "top-producers" }));
    }
  }


  // ------------------------------------------------------------------ memory → wait arrows (ISA gutter)
  // One arrow per (memory instruction, wait) pair that the waves' waitcnt
  // data links (DEPS.waits, all traced waves): from the memory instruction's
  // row to the wait's row, in the gutter left of the pc column; a longer arrow
  // runs further left (lowest free slot, as the viewer lays them out), its
  // width grows with the wait cycles charged to the pair. Rows hidden by the
  // filter have no arrow.
  var ARROW_COLORS = ["#c62828", "#1565c0", "#2e7d32", "#8e24aa", "#ef6c00", "#00838f", "#6d4c41", "#ad1457"];
  var MAX_VIEW_WAITS = 200;
  var arrows = { svg: null, table: null, all: null, pairs: [], frame: 0 };
  function initArrows(tableEl, allBox) {
    arrows.table = tableEl;
    arrows.all = allBox;
    arrows.svg = svg("svg", { id: "isa-arrows", class: "arrows", "aria-label": "memory to wait arrows" });
    isaPane.appendChild(arrows.svg);
    allBox.addEventListener("change", drawArrows);
    isaPane.addEventListener("scroll", function () { if (allBox.checked) scheduleArrows(); });
    if (window.ResizeObserver) new ResizeObserver(scheduleArrows).observe(tableEl);
    selectionHooks.push(drawArrows);
    api.arrows = function () { return arrows.pairs.map(function (p) { return { wait: p.wait, producer: p.producer, cycles: p.cycles }; }); };
  }
  function scheduleArrows() {
    if (arrows.frame) return;
    arrows.frame = requestAnimationFrame(function () { arrows.frame = 0; drawArrows(); });
  }
  function waitsInView() {
    var top = isaPane.getBoundingClientRect().top, bottom = top + isaPane.clientHeight, out = [];
    Object.keys(DEPS.waits).forEach(function (w) {
      var r = isaRows[rowOfPc[w]];
      if (!r || r.hidden) return;
      var b = r.getBoundingClientRect();
      if (b.bottom > top && b.top < bottom) out.push([Number(w), b.top]);
    });
    out.sort(function (a, b) { return a[1] - b[1]; });
    return out.slice(0, MAX_VIEW_WAITS).map(function (x) { return x[0]; });
  }
  function arrowPairs() {
    var pairs = [], seen = {};
    function push(w, p, cyc, color) {
      var k = w + ":" + p;
      if (seen[k]) return;
      seen[k] = 1;
      pairs.push({ wait: w, producer: p, cycles: cyc, color: color });
    }
    function ofWait(w, color) { (DEPS.waits[w] || []).forEach(function (pr) { push(Number(w), pr[0], pr[1], color); }); }
    var pc = state.pc;
    if (pc !== null && pc !== undefined) {
      ofWait(pc, ARROW_COLORS[0]);
      (waitersOf[pc] || []).forEach(function (x, j) { push(x[0], pc, x[1], ARROW_COLORS[j % ARROW_COLORS.length]); });
    }
    if (arrows.all && arrows.all.checked) waitsInView().forEach(function (w, j) { ofWait(w, ARROW_COLORS[(j + 1) % ARROW_COLORS.length]); });
    return pairs;
  }
  function drawArrows() {
    var g = arrows.svg;
    if (!g) return;
    while (g.firstChild) g.removeChild(g.firstChild);
    var wanted = arrowPairs();
    arrows.pairs = [];
    g.dataset.count = "0";
    if (!wanted.length) return;  // nothing to draw: no layout read
    var t = arrows.table, tr = t.getBoundingClientRect(), gut = t.tHead.rows[0].cells[0].getBoundingClientRect().width;
    g.setAttribute("width", gut);
    g.setAttribute("height", tr.height);
    g.style.top = t.offsetTop + "px";
    var placed = [], maxCyc = 1, drawn = [];
    var pairs = wanted.filter(function (p) {
      var a = isaRows[rowOfPc[p.producer]], b = isaRows[rowOfPc[p.wait]];
      if (!a || !b || a.hidden || b.hidden) return false;
      var ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
      p.y0 = ra.top - tr.top + ra.height / 2;
      p.y1 = rb.top - tr.top + rb.height / 2;
      maxCyc = Math.max(maxCyc, p.cycles);
      return true;
    });
    pairs.sort(function (a, b) { return Math.abs(a.y1 - a.y0) - Math.abs(b.y1 - b.y0); });
    pairs.forEach(function (p) {
      var lo = Math.min(p.y0, p.y1), hi = Math.max(p.y0, p.y1), slot = 0;
      while (placed.some(function (q) { return q.slot === slot && q.lo <= hi && lo <= q.hi; })) slot++;
      placed.push({ slot: slot, lo: lo, hi: hi });
      p.slot = slot;
    });
    var slots = placed.reduce(function (m, q) { return Math.max(m, q.slot + 1); }, 1), step = Math.max(1.5, Math.min(6, (gut - 10) / slots));
    var defs = svg("defs", {});
    ARROW_COLORS.forEach(function (c, j) {
      var m = svg("marker", { id: "arrow-head-" + j, viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
      m.appendChild(svg("path", { d: "M0,0 L8,4 L0,8 z", fill: c }));
      defs.appendChild(m);
    });
    g.appendChild(defs);
    pairs.forEach(function (p) {
      var x0 = gut - 3, x = Math.max(2, gut - 8 - p.slot * step), w = 0.8 + 1.7 * p.cycles / maxCyc;
      var path = svg("path", { d: "M" + x0 + "," + p.y0 + " C" + x + "," + p.y0 + " " + x + "," + p.y1 + " " + x0 + "," + p.y1,
        stroke: p.color, "stroke-width": w.toFixed(2), fill: "none", "marker-end": "url(#arrow-head-" + ARROW_COLORS.indexOf(p.color) + ")",
        "data-wait": p.wait, "data-producer": p.producer });
      path.appendChild(svg("title", {}, "pc " + p.producer + " " + isaText(p.producer) + "  →  wait pc " + p.wait + ": " + fmtInt(p.cycles) + " wait cycles charged"));
      path.addEventListener("click", function () { selectPc(p.producer, true); });
      g.appendChild(path);
      drawn.push(p);
    });
    arrows.pairs = drawn;
    g.dataset.count = String(drawn.length);
  }
