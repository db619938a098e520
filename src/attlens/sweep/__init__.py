"""Sweeps: ``attlens profile`` for many jobs over GPUs and nodes, resumably,
and the results side by side (docs/sweep.md).

- :mod:`~attlens.sweep.spec` — the sweep file (TOML/YAML, ``sweep.schema.json``)
- :mod:`~attlens.sweep.manifest` — the SQLite state of a sweep folder
- :mod:`~attlens.sweep.run` — opening a folder, resume, attempt bookkeeping
- :mod:`~attlens.sweep.job` — one attempt: start, wait, classify, analyze
- :mod:`~attlens.sweep.proc` — ending a job's whole process tree
- :mod:`~attlens.sweep.gpus` — GPU discovery and pinning
- engines: :mod:`~attlens.sweep.local`, :mod:`~attlens.sweep.ray_engine`,
  :mod:`~attlens.sweep.slurm` (with :mod:`~attlens.sweep.worker`, the
  processes they start)
- :mod:`~attlens.sweep.summary` — a job's headline figures;
  :mod:`~attlens.sweep.status`, :mod:`~attlens.sweep.dashboard`,
  :mod:`~attlens.sweep.progress` — what the user sees
"""
