"""A capture's own data (:class:`attlens.model.loader.CaptureData`) to and from
a digest: columns as arrays, the rest as JSON. Columns come back when first
used, checked and widened to their dtype (:mod:`attlens.cache.packing`: each
integer column is stored in the narrowest type holding its values or their
differences); if one turns out damaged the capture is read afresh for it, the
digest dropped (a note says so) and nothing wrong is used.

Only what cannot be recomputed cheaply is stored: the wave index of each
record and timeline segment (a repeat of the per-wave counts) and each
record's idle (the writer's running-maximum rule over time and duration, per
wave) are rebuilt from the stored columns when a command asks for them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attlens.cache.store import DamagedDigest, capture_key

LAYOUT = 2  # of the content of capture.json (1: every column as loaded); another is dropped and rebuilt
_RECORDS = ("time", "category", "stall", "duration", "pc")  # stored; "wave" and "idle" are rebuilt
_WAVES = ("se", "simd", "slot", "instance", "cu", "begin", "end", "rec_start", "rec_stop", "tl_start", "tl_stop",
          "waitcnt_blob", "waitcnt_off")
_TIMELINE = ("state", "duration")  # "wave" is rebuilt
_CODE = ("is_label", "present", "codeobj", "vaddr", "hit", "latency", "stall", "idle")


def digest_of(capture: Path) -> str:
    """The capture's key (computed once per command: :func:`attlens.cache.keys.command_scope`)."""
    return capture_key(capture)


def write_digest(store, capture: Path, key: str, data, unchanged=None, placed=None):
    """Store ``data`` if the capture did not change while it was read: looked
    at first, or, given ``unchanged()``, asked just before the digest is
    renamed into place (the write-behind child asks the command: cache.behind).
    ``placed()``: called once the digest is in place (DigestStore.write)."""
    if unchanged is None:
        try:
            if capture_key(capture, fresh=True) != key:
                return None
        except OSError:
            return None
    from attlens.cache.packing import pack_lazily as pack  # each column made step by step as it is written

    arrays: dict[str, np.ndarray] = {}
    packing: dict[str, list] = {}
    for group, names, obj in (("records", _RECORDS, data.records), ("waves", _WAVES, data.waves),
                              ("timeline", _TIMELINE, data.timeline)):
        for n in names:
            arrays[f"{group}.{n}"], enc = pack(getattr(obj, n))
            if enc is not None:
                packing[f"{group}.{n}"] = enc
    for n in _CODE:
        arrays[f"code.{n}"] = getattr(data.code, n)
    idx = data.index
    entries = idx.waves
    for n in ("se", "simd", "slot", "instance", "begin", "end"):
        arrays[f"index.{n}"] = np.array([getattr(e, n) for e in entries], dtype=np.int64)
    if data.occupancy is not None:
        arrays["occupancy.events"], enc = pack(data.occupancy.events)
        if enc is not None:
            packing["occupancy.events"] = enc
    code = data.code
    meta = {
        "layout": LAYOUT,
        "packing": packing,
        "capture": str(capture),
        "key": key,
        "code": {"isa": code.isa, "source": code.source, "labels": code.labels, "version": code.version,
                 "extra_columns": code.extra_columns, "layout": code.layout, "sums": list(code.sums),
                 "has_addresses": code.has_addresses},
        "index": {"gfxip": idx.gfxip, "gfxv": idx.gfxv, "version": idx.version, "counter_names": idx.counter_names,
                  "pc_sampling": idx.pc_sampling, "other_simd": idx.other_simd, "filenames": [e.filename for e in entries],
                  "se_filenames": idx.se_filenames},
        "filenames": data.waves.filenames,
        "occupancy": None if data.occupancy is None else {
            "dispatches": [[k, v] for k, v in data.occupancy.dispatches.items()], "version": data.occupancy.version,
            "encoding": data.occupancy.encoding, "time_resolution": data.occupancy.time_resolution,
            "dispatch_events": data.occupancy.dispatch_events},
        "realtime": None if data.realtime is None else {
            "samples": [[se, [list(p) for p in pts]] for se, pts in data.realtime.samples.items()],
            "frequency_hz": data.realtime.frequency_hz},
        "snapshots": [[k, None if v is None else str(v)] for k, v in data.snapshots.items()],
        "warnings": data.warnings,
        "skipped_waves": data.skipped_waves,
    }
    try:
        return store.write(capture, key, arrays, meta, commit=unchanged, placed=placed)
    except TypeError:  # a value JSON cannot hold (never from the readers): no digest
        return None


def read_digest(digest, read_fresh):
    """CaptureData from a digest, or None when it is unusable (then dropped)."""
    from attlens.io.code_json import CodeListing
    from attlens.io.filenames_json import FilenamesIndex, WaveEntry
    from attlens.io.occupancy_json import Occupancy
    from attlens.io.realtime_json import Realtime
    from attlens.model.dispatch import Records, Timeline, Waves
    from attlens.cache.packing import unpack
    from attlens.model.loader import CaptureData, segmented_idle

    fresh: list = []

    def column(group: str, name: str, rebuild=None):
        def load():
            try:
                if rebuild is not None:
                    return rebuild()
                key = f"{group}.{name}"
                return unpack(digest.array(key), packing.get(key))
            except (DamagedDigest, ValueError) as exc:
                if not fresh:
                    digest.store.drop(digest.folder, digest.capture, str(exc), digest)
                    fresh.append(read_fresh())
                return getattr(getattr(fresh[0], group), name)

        return load

    try:
        m = digest.meta
        if m.get("layout") != LAYOUT or not isinstance(m.get("packing"), dict):
            raise ValueError(f"content layout {m.get('layout')!r}, expected {LAYOUT}")
        packing = m["packing"]
        c = m["code"]
        code = CodeListing(
            isa=c["isa"], source=c["source"], labels=[(int(p), str(n)) for p, n in c["labels"]], version=c["version"],
            extra_columns=c["extra_columns"], layout=c["layout"], sums=tuple(c["sums"]), has_addresses=bool(c["has_addresses"]),
            **{n: digest.array(f"code.{n}") for n in _CODE},
        )
        ix = m["index"]
        cols = [digest.array(f"index.{n}").tolist() for n in ("se", "simd", "slot", "instance", "begin", "end")]
        entries = [WaveEntry(se, simd, slot, k, name, b, e) for se, simd, slot, k, b, e, name in zip(*cols, ix["filenames"])]
        index = FilenamesIndex(
            gfxip=ix["gfxip"], gfxv=ix["gfxv"], version=ix["version"], counter_names=ix["counter_names"],
            waves=entries, pc_sampling=ix["pc_sampling"], other_simd=ix["other_simd"], se_filenames=list(ix["se_filenames"]),
        )
        occ = None
        if m["occupancy"] is not None:
            mo = m["occupancy"]
            occ = Occupancy(events=unpack(digest.array("occupancy.events"), packing.get("occupancy.events")),
                            dispatches={int(k): v for k, v in mo["dispatches"]},
                            version=mo["version"], encoding=mo["encoding"], time_resolution=int(mo["time_resolution"]),
                            dispatch_events=list(mo["dispatch_events"]))
        rt = None
        if m["realtime"] is not None:
            rt = Realtime(samples={int(se): [tuple(p) for p in pts] for se, pts in m["realtime"]["samples"]},
                          frequency_hz=m["realtime"]["frequency_hz"])
        snapshots = {k: None if v is None else Path(v) for k, v in m["snapshots"]}
        waves = Waves.lazy({n: column("waves", n) for n in _WAVES}, filenames=list(m["filenames"]))
        records = Records.lazy({n: column("records", n) for n in _RECORDS})
        timeline = Timeline.lazy({n: column("timeline", n) for n in _TIMELINE})
        records._loaders["wave"] = column("records", "wave", lambda: _wave_of(waves.rec_start, waves.rec_stop))
        records._loaders["idle"] = column("records", "idle", lambda: segmented_idle(
            records.time, records.duration, records.wave, waves.begin, waves.rec_start))
        timeline._loaders["wave"] = column("timeline", "wave", lambda: _wave_of(waves.tl_start, waves.tl_stop))
        return CaptureData(code, index, waves, records, timeline, occ, rt, snapshots, list(m["warnings"]),
                           bool(m["skipped_waves"]))
    except (DamagedDigest, KeyError, TypeError, ValueError) as exc:
        digest.store.drop(digest.folder, digest.capture, str(exc), digest)
        return None


def _wave_of(start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """int32 wave index of each row, rows of wave ``w`` being ``start[w]:stop[w]`` back to back."""
    return np.repeat(np.arange(len(start), dtype=np.int32), np.asarray(stop) - np.asarray(start))
