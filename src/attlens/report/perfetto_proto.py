"""Perfetto protobuf trace of a capture (``attlens export -o trace.pftrace``;
opens in ui.perfetto.dev), written with the ``perfetto`` package's trace
builder (the optional extra ``attlens[perfetto]``).

The same tracks and times as the JSON form (:mod:`attlens.report.perfetto`):
one process track per shader engine; under it, per (CU, SIMD, slot), a track
with one slice per wave and its instruction slices nested inside (named by
mnemonic through interned names; the pc and the stall as arguments; the
instruction's own source line as the slice's source location), a sibling
track with the wave-state slices, and a counter track with the waves resident
on the SE's CUs. Times are nanoseconds from the first wave's start, the SEs
aligned with the realtime clock (1 ns per cycle when the clock is unknown).

What the JSON form cannot carry at this size: **every wave** (no event cap by
default — the protobuf form is ~5x smaller than the JSON of the same events),
and a **flow** from each memory instruction to the wait that consumed it (the
wait dependency pairs of docs/waitdeps.md: the arrow starts at the producer's
slice and ends at the wait's).

Streamed wave by wave: each wave's packets are built with one
``TraceProtoBuilder`` and appended to the file (a protobuf ``Trace`` is a
repeated field, so the pieces concatenate into one trace).
"""

from __future__ import annotations

import numpy as np

from attlens.model.dispatch import STATE_NAMES

SEQUENCE = 1  # one trusted packet sequence: interned names are shared by every packet
PERFETTO_HINT = "pip install 'perfetto>=0.50' (in the attlens clone: pip install -e '.[perfetto]'), or write the JSON form (-o trace.json)"


def _builder():
    try:
        from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TracePacket, TrackDescriptor, TrackEvent
        from perfetto.trace_builder.proto_builder import TraceProtoBuilder
    except ImportError as exc:
        from attlens.errors import UsageError

        raise UsageError("the protobuf Perfetto trace needs the perfetto package, which is not installed", hint=PERFETTO_HINT) from exc
    return TraceProtoBuilder, TracePacket, TrackDescriptor, TrackEvent


def _flow_index(pairs, records: int):
    """Per record, the flows it starts (as a producer) and ends (as a wait):
    (order, starts) pairs sorted by record, for searchsorted lookups. Flow id
    = pair row + 1."""
    prod = np.asarray(pairs.prod_rec, dtype=np.int64)
    wait = np.asarray(pairs.wait_rec, dtype=np.int64)
    po = np.argsort(prod, kind="stable")
    wo = np.argsort(wait, kind="stable")
    return (prod[po], po + 1), (wait[wo], wo + 1)


def _ids_in(index, a: int, b: int):
    keys, ids = index
    lo, hi = np.searchsorted(keys, a), np.searchsorted(keys, b)
    return keys[lo:hi], ids[lo:hi]


def stream_proto(result, clock, out, pairs=None, max_waves: int | None = None, window: tuple[int, int] | None = None,
                 max_events: int | None = None) -> dict:
    """Write the protobuf trace to ``out`` (atomically, streamed); returns a
    summary: bytes, events (slice begins + ends, counter values, flow ends
    counted once per flow), waves written, flows."""
    from attlens.fsutil import atomic_writer
    from attlens.report.perfetto import _chosen_waves

    TraceProtoBuilder, TracePacket, TrackDescriptor, TrackEvent = _builder()
    d = result.dispatch
    w, recs, tl = d.waves, d.records, d.timeline
    offsets = clock.se_offsets_cycles or {}
    chosen, shift, begin, end, origin = _chosen_waves(d, clock, max_waves, window)
    freq = clock.frequency_hz
    scale = 1e9 / freq if freq else 1.0
    per_wave = 2 * ((w.rec_stop - w.rec_start) + (w.tl_stop - w.tl_start) + 1)
    cut, chosen_all = 0, chosen
    if max_events:
        fits = np.cumsum(per_wave[chosen]) <= int(max_events)
        cut = int((~fits).sum())
        chosen = chosen[fits]
    chosen = np.sort(chosen)

    def ns(c):
        return np.rint((np.asarray(c, dtype=np.float64) - origin) * scale).astype(np.int64)

    st = d.static
    names = st.mnemonic
    flows_out = flows_in = None
    if pairs is not None and len(pairs.wait_rec):
        flows_out, flows_in = _flow_index(pairs, recs.count)
    interned_names: dict[str, int] = {}
    interned_locations: dict[str, int] = {}
    SLICE_BEGIN, SLICE_END, COUNTER = TrackEvent.TYPE_SLICE_BEGIN, TrackEvent.TYPE_SLICE_END, TrackEvent.TYPE_COUNTER
    ANN_PC, ANN_STALL, ANN_RECORDS = 1, 2, 3
    se_uuid = {}
    n_events = n_flows = 0

    def new_packet(b, ts=None):
        p = b.add_packet()
        p.trusted_packet_sequence_id = SEQUENCE
        if ts is not None:
            p.timestamp = ts
        return p

    def name_iid(b_packet, text: str) -> int:
        iid = interned_names.get(text)
        if iid is None:
            iid = interned_names[text] = len(interned_names) + 1
            e = b_packet.interned_data.event_names.add()
            e.iid, e.name = iid, text
        return iid

    def location_iid(b_packet, pc: int) -> int | None:
        own = st.own_source[pc]
        if not own:
            return None
        key = str(own)
        iid = interned_locations.get(key)
        if iid is None:
            iid = interned_locations[key] = len(interned_locations) + 1
            loc = b_packet.interned_data.source_locations.add()
            loc.iid, loc.file_name = iid, str(own.file)
            if own.line is not None:
                loc.line_number = int(own.line)
        return iid

    with atomic_writer(out) as f:
        b = TraceProtoBuilder()
        first = new_packet(b)
        first.first_packet_on_sequence = True
        first.sequence_flags = TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        for iid, text in ((ANN_PC, "pc"), (ANN_STALL, "stall"), (ANN_RECORDS, "records")):
            a = first.interned_data.debug_annotation_names.add()
            a.iid, a.name = iid, text
        for se in sorted(set(w.se[chosen].tolist())):
            p = new_packet(b)
            se_uuid[se] = 1_000_000 + se
            p.track_descriptor.uuid = se_uuid[se]
            p.track_descriptor.process.pid = se + 1
            p.track_descriptor.process.process_name = f"SE{se}"
        f.write(b.serialize())
        tracks: set[int] = set()
        for wi in chosen.tolist():
            b = TraceProtoBuilder()
            se, cu, simd, slot = int(w.se[wi]), int(w.cu[wi]), int(w.simd[wi]), int(w.slot[wi])
            track = 10_000_000 + se * 1_000_000 + cu * 10_000 + simd * 100 + slot
            states = track + 500_000_000
            if track not in tracks:
                tracks.add(track)
                for uuid, label in ((track, f"CU{cu} SIMD{simd} slot{slot}"), (states, f"CU{cu} SIMD{simd} slot{slot} states")):
                    p = new_packet(b)
                    p.track_descriptor.uuid = uuid
                    p.track_descriptor.parent_uuid = se_uuid[se]
                    p.track_descriptor.name = label
            wb, we = int(ns(begin[wi])), int(ns(end[wi]))
            a, z = int(w.rec_start[wi]), int(w.rec_stop[wi])
            t0 = recs.time[a:z] + shift[wi]
            t1 = np.minimum(np.r_[t0[1:], end[wi]], t0 + recs.duration[a:z])
            t1 = np.minimum(np.maximum(t1, t0), end[wi])
            s_ns, e_ns = ns(t0), ns(t1)
            wave_end = max(we, int(e_ns.max()) if len(e_ns) else we)
            p = new_packet(b, max(wb, 0))
            ev = p.track_event
            ev.type, ev.track_uuid, ev.name = SLICE_BEGIN, track, f"wave {w.filenames[wi][:-5]}"
            ann = ev.debug_annotations.add()
            ann.name_iid, ann.uint_value = ANN_RECORDS, z - a
            n_events += 1
            starts = ends = None
            if flows_out is not None:
                starts = _ids_in(flows_out, a, z)
                ends = _ids_in(flows_in, a, z)
            so = eo = 0
            pcs = recs.pc[a:z].tolist()
            stalls = recs.stall[a:z].tolist()
            for k, (s0, e0, pc, stall) in enumerate(zip(s_ns.tolist(), e_ns.tolist(), pcs, stalls)):
                rec = a + k
                p = new_packet(b, s0)
                ev = p.track_event
                ev.type, ev.track_uuid = SLICE_BEGIN, track
                ev.name_iid = name_iid(p, names[pc])
                loc = location_iid(p, pc)
                if loc is not None:
                    ev.source_location_iid = loc
                ann = ev.debug_annotations.add()
                ann.name_iid, ann.uint_value = ANN_PC, pc
                if stall:
                    ann = ev.debug_annotations.add()
                    ann.name_iid, ann.uint_value = ANN_STALL, stall
                if starts is not None:
                    while so < len(starts[0]) and starts[0][so] == rec:
                        ev.flow_ids.append(int(starts[1][so]))
                        so += 1
                        n_flows += 1
                    while eo < len(ends[0]) and ends[0][eo] == rec:
                        ev.terminating_flow_ids.append(int(ends[1][eo]))
                        eo += 1
                p = new_packet(b, e0)
                p.track_event.type, p.track_event.track_uuid = SLICE_END, track
            n_events += 2 * (z - a)
            p = new_packet(b, wave_end)
            p.track_event.type, p.track_event.track_uuid = SLICE_END, track
            n_events += 1
            ta, tz = int(w.tl_start[wi]), int(w.tl_stop[wi])
            tdur = tl.duration[ta:tz].astype(np.int64)
            seg_end = begin[wi] + np.cumsum(tdur)
            seg_start = seg_end - tdur
            for s0, e0, state in zip(ns(seg_start).tolist(), ns(seg_end).tolist(), tl.state[ta:tz].tolist()):
                p = new_packet(b, s0)
                ev = p.track_event
                ev.type, ev.track_uuid = SLICE_BEGIN, states
                ev.name_iid = name_iid(p, STATE_NAMES.get(int(state), str(state)))
                p = new_packet(b, e0)
                p.track_event.type, p.track_event.track_uuid = SLICE_END, states
            n_events += 2 * (tz - ta)
            f.write(b.serialize())
        n_events += _counters(d, offsets, se_uuid, ns, new_packet, TraceProtoBuilder, COUNTER, f)
        size = f.tell()
    return {
        "format": "proto",
        "kernel": d.kernel_name,
        "capture": str(d.path),
        "time_unit": "ns from realtime clock" if freq else "1 ns per shader cycle (clock unknown)",
        "shader_clock_hz": freq,
        "waves_exported": int(len(chosen)),
        "waves_total": int(w.count),
        "waves_selected": int(len(chosen_all)),
        "max_events": int(max_events) if max_events else None,
        "waves_cut_by_max_events": cut,
        "events": n_events,
        "flows": n_flows,
        "bytes": size,
    }


def _counters(d, offsets, se_uuid, ns, new_packet, TraceProtoBuilder, COUNTER, f) -> int:
    """A counter track per exported SE: the waves resident on its CUs (occupancy.json)."""
    occ = d.occupancy
    if occ is None or not len(occ.events):
        return 0
    n = 0
    for se in sorted(set(occ.events[:, 0].tolist())):
        if int(se) not in se_uuid:
            continue
        ev = occ.events[occ.events[:, 0] == se]
        ev = ev[np.lexsort((ev[:, 5], ev[:, 1]))]
        t = ev[:, 1] + offsets.get(int(se), 0)
        level = np.cumsum(np.where(ev[:, 5] == 1, 1, -1))
        last = np.r_[t[1:] != t[:-1], True]
        b = TraceProtoBuilder()
        uuid = se_uuid[int(se)] + 500_000
        p = new_packet(b)
        p.track_descriptor.uuid = uuid
        p.track_descriptor.parent_uuid = se_uuid[int(se)]
        p.track_descriptor.name = "waves resident (all CUs)"
        p.track_descriptor.counter.SetInParent()
        for tt, lv in zip(ns(t[last]).tolist(), level[last].tolist()):
            p = new_packet(b, max(int(tt), 0))
            p.track_event.type, p.track_event.track_uuid, p.track_event.counter_value = COUNTER, uuid, int(lv)
            n += 1
        f.write(b.serialize())
    return n
