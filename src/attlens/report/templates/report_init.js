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
      Object.keys(ph).filter(function (k) { return ph[k].records; }).map(function (k) { return [k, fmtInt(ph[k].records), fmtStall(ph[k].stall), fmtInt(ph[k].latency)]; }), { id: "phases-table" }));
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

  // ------------------------------------------------------------------ start
  api.selectPc = selectPc;
  api.selectLine = selectLine;
  function guardAsync(name, fn) {
    try {
      return Promise.resolve(fn()).catch(function (err) { guard(name, function () { throw err; }); });
    } catch (err) {
      guard(name, function () { throw err; });
      return Promise.resolve();
    }
  }
  guard("summary", renderSummary);
  guard("findings", renderFindings);
  guard("headline", renderHeadline);
  guard("code", renderCode);
  guard("pipes", renderPipes);
  guard("pmc", renderPmc);
  guard("reproduce", renderReproduce);
  // the timeline, the hotspot scope and the wave view read packed arrays: inflate them first
  var packed = typeof DecompressionStream === "function"
    ? unpackTree({ timeline: DATA.timeline, scope: DATA.scope }).then(function () { return true; })
    : Promise.resolve(false);
  packed.then(function (ok) {
    if (!ok) {
      ["hotspots", "timeline", "wave"].forEach(function (id) {
        add(section(id), el("p", { class: "warn", text: "This browser cannot inflate the embedded data (it has no DecompressionStream); open the report in a current Chromium, Firefox or Safari." }));
      });
      return;
    }
    guard("timeline", renderTimeline);
    guard("hotspots", renderHotspots);
    return guardAsync("wave", renderWave);
  }, function (err) { guard("timeline", function () { throw err; }); }).then(function () {
    document.body.dataset.ready = "1";
  });
})();
