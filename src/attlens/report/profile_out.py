"""Renderers of ``attlens profile`` / ``attlens capture``."""

from __future__ import annotations

from rich.markup import escape

from attlens import __version__

PROFILE_SCHEMA = "attlens.profile"


def _cap(c) -> dict:
    return {"path": str(c.path), "agent_handle": c.agent_handle, "dispatch_id": c.dispatch_id, "waves": c.waves,
            "instructions": c.instructions, "instructions_with_source": c.mapped_lines}


def profile_to_dict(res) -> dict:
    kernels = None
    kernel = res.kernel
    if res.kernels is not None:
        try:
            from attlens.report.kernels_out import kernels_to_dict, row_to_dict

            kernels = kernels_to_dict(res.kernels)
            row = res.kernels.row(res.kernel["name"]) if res.kernel else None
            if row is not None:  # the same row shape as attlens.kernels
                kernel = row_to_dict(row)
        except Exception:  # the kernel table is informational here
            kernels = None
    analysis = None
    if res.analysis is not None:
        from attlens.report.json_out import analysis_to_dict

        analysis = analysis_to_dict(res.analysis, topk=10)
    return {
        "schema": PROFILE_SCHEMA,
        "schema_version": 1,
        "attlens_version": __version__,
        "out_dir": str(res.out_dir),
        "rocprofv3": res.rocprofv3,
        "rocprofv3_version": res.version,
        "target": res.target,
        "att_available": res.att_available,
        "att_unavailable_reason": res.att_unavailable_reason,
        "kernel": kernel,
        "kernel_reason": res.kernel_reason,
        "dispatches_per_kernel_id": res.dispatches,
        "iterations": res.iterations,
        "iteration_reason": res.iteration_reason,
        "job_file": str(res.job_file) if res.job_file else None,
        "environment": res.environment,
        "captures": [_cap(c) for c in res.captures],
        "empty_shells_moved_to": [str(p) for p in res.shells_moved],
        "best_capture": str(res.best) if res.best else None,
        "noise_check": res.noise,
        "steps": res.steps,
        "next_commands": res.next_commands,
        "kernels": kernels,
        "analysis": analysis,
    }


def render_profile(res, console) -> None:
    for s in res.steps:
        mark = {"ok": "[green]✓[/green]", "skipped": "[yellow]–[/yellow]"}.get(s["status"], "•")
        console.print(f"{mark} [bold]{s['step']}[/bold]: {escape(s['detail'])}")
    if res.kernels is not None and (not res.att_available or res.kernel is None):
        from attlens.report.kernels_out import render_kernels

        render_kernels(res.kernels, console)
    if res.noise:
        console.print(f"  noise floor: class shares of the two dispatches differ by ≤ {res.noise['max_class_share_difference']:.1%}; "
                      "changes smaller than this between builds are not significant")
    if res.analysis is not None:
        from attlens.report.terminal import render_analysis

        console.rule("analysis of the best capture")
        render_analysis(res.analysis, console, topk=8)
    for c in res.next_commands:
        console.print(f"next: {escape(c)}")
