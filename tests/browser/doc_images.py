"""Regenerate the screenshots of docs/report.md (docs/img/*.png) from the real
captures of ../shared: the HTML report's first screen, the ISA pane with its
memory -> wait arrows, the single-wave timeline (softmax), and the sweep
dashboard of ../shared/traces (``attlens sweep report`` on a folder of
captures), each at 1,366 and 1,920 px.

    PYTHONPATH=src python tests/browser/doc_images.py [--shared ../shared]

Needs what the browser tests need (Debian's Chromium, the playwright package)
and, to keep the files small, Pillow (each image is reduced to a 192-colour
palette; without Pillow they are written as Chromium saves them). Not a test.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(REPO / "tests")]

SOFTMAX = "traces/softmax/big/ui_output_agent_47920_dispatch_13"
COLOURS = 192


def _small(src: Path, dst: Path) -> int:
    try:
        from PIL import Image
    except ImportError:
        shutil.copyfile(src, dst)
        return dst.stat().st_size
    with Image.open(src) as im:
        im.convert("RGB").quantize(colors=COLOURS, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(dst, optimize=True)
    return dst.stat().st_size


def _report(shared: Path, out: Path) -> Path:
    import attlens
    from attlens.analysis.plan import make_plan
    from attlens.analysis.waves import analyze_waves
    from attlens.report.html import render_html

    r = attlens.analyze(attlens.load(shared / SOFTMAX))
    wa = analyze_waves(r)
    render_html(r, make_plan(r, waves=wa), wa, out)
    return out


def _dashboard(shared: Path, tmp: Path) -> Path:
    from attlens.sweep.dashboard import report

    report(shared / "traces", tmp / "dash" / "dashboard.html")
    return tmp / "dash" / "dashboard.html"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    args = ap.parse_args()
    from pwhelp import Pages, session_browser

    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        page_path = _report(args.shared, tmp / "softmax.html")
        dash_path = _dashboard(args.shared, tmp)
        pages = Pages(session_browser())
        shots = []
        for width in (1366, 1920):
            page = pages.open(page_path, viewport=(width, 800)).page
            shots.append((page, None, f"report-first-{width}.png"))
            page.screenshot(path=str(tmp / shots[-1][2]))
            # a wait whose memory instructions fit the pane with it
            near = page.evaluate("""() => { const W = attlensReport.data.deps.waits; let best = null, span = 1e9;
                for (const w in W) { if (W[w].length < 3) continue; const s = Number(w) - Math.min(...W[w].map(p => p[0])); if (s < span) { span = s; best = Number(w); } }
                return best; }""")
            page.evaluate("pc => attlensReport.selectPc(pc, true)", near)
            page.evaluate("""pc => { const pane = document.getElementById('isa-pane'), r = document.querySelector(`#isa-table tr.isa-row[data-pc='${pc}']`);
                pane.scrollTop += r.getBoundingClientRect().top - pane.getBoundingClientRect().top - pane.clientHeight * 0.75;
                document.getElementById('code-split').scrollIntoView(); }""", near)
            page.locator("#code-split").screenshot(path=str(tmp / f"report-arrows-{width}.png"))
            page.locator("#wave").scroll_into_view_if_needed()
            page.locator("#wave").screenshot(path=str(tmp / f"report-wave-{width}.png"))
            dash = pages.open(dash_path, viewport=(width, 800)).page
            dash.screenshot(path=str(tmp / f"sweep-dashboard-{width}.png"))
            for name in (f"report-first-{width}.png", f"report-arrows-{width}.png", f"report-wave-{width}.png", f"sweep-dashboard-{width}.png"):
                n = _small(tmp / name, args.out / name)
                total += n
                print(f"{args.out / name}: {n:,} bytes")
        pages.close()
    print(f"total {total:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
