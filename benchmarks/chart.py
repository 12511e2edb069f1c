"""Draws docs/performance-cpu.png from a results file: CPU per watched frame, framestream beside its peers.

    .venv/bin/python -m benchmarks.chart [RESULTS.json] [docs/performance-cpu.png]

No new dependency: the chart is an SVG written here and rendered to PNG by the same headless Chromium the
project already needs (`--screenshot`). The Chromium is a child of this process, in a session of its own,
ended by its process group if it does not finish in time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from html import escape
from pathlib import Path
from typing import Any

from benchmarks.report import size_order
from benchmarks.saving import latest

ROOT = Path(__file__).resolve().parent.parent
SERIES = [("framestream", "#1f6feb"), ("ffmpeg", "#d9822b"), ("selkies", "#6a737d")]
W, H = 1100, 560


def _fps(row: dict[str, Any], name: str) -> float | None:
    if name == "framestream":
        return float(row["framestream"]["stream"]["fps"])
    fps = row.get(name, {}).get("fps")
    return None if fps is None else float(fps)


def _value(row: dict[str, Any], name: str) -> float | None:
    if name == "framestream":
        return float(row["framestream"]["cpu"]["service"])
    peer = row.get(name, {})
    if "skipped" in peer:
        return None
    value = peer.get("cpu", {}).get(name)
    return None if value is None else float(value)


def svg(results: dict[str, Any]) -> str:
    rows = sorted(results["cpu"], key=lambda r: size_order(str(r["size"])))  # dpr 2 first, as the tables
    groups = [(f"{r['page']}\n{r['size'].split(' ')[0]}", r) for r in rows]
    values = [v for _, r in groups for n, _ in SERIES if (v := _value(r, n)) is not None]
    top = max(0.05, max(values, default=0.05)) * 1.2
    left, right, plot_top, plot_bottom = 80, W - 20, 90, H - 95
    plot_h = plot_bottom - plot_top
    group_w = (right - left) / max(1, len(groups))
    bar_w = min(46.0, group_w / (len(SERIES) + 1.2))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="DejaVu Sans, sans-serif">',
           f'<rect width="{W}" height="{H}" fill="#fff"/>',
           '<text x="20" y="32" font-size="20" font-weight="bold">CPU per watched frame (vCPU, server process only; '
           'lower is better)</text>',
           f'<text x="20" y="54" font-size="13" fill="#555">{escape(_subtitle(results))}</text>',
           '<text x="20" y="72" font-size="13" fill="#555">Animated bars are labelled with the pictures a second each '
           'delivered (ffmpeg: encoded).</text>']
    step = _tick_step(top)
    tick = 0.0
    while tick <= top + 1e-9:
        y = plot_bottom - tick / top * plot_h
        out.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" font-size="12" text-anchor="end">{tick:.2f}</text>')
        tick += step
    for i, (label, row) in enumerate(groups):
        x0 = left + i * group_w + (group_w - bar_w * len(SERIES)) / 2
        for j, (name, colour) in enumerate(SERIES):
            value = _value(row, name)
            x = x0 + j * bar_w
            if value is None:
                out.append(f'<text x="{x + bar_w / 2:.1f}" y="{plot_bottom - 6}" font-size="10" fill="#999" '
                           f'text-anchor="middle">n/a</text>')
                continue
            h = value / top * plot_h
            out.append(f'<rect x="{x + 2:.1f}" y="{plot_bottom - h:.1f}" width="{bar_w - 4:.1f}" height="{h:.1f}" '
                       f'fill="{colour}"/>')
            out.append(f'<text x="{x + bar_w / 2:.1f}" y="{plot_bottom - h - 5:.1f}" font-size="11" '
                       f'text-anchor="middle">{value:.3f}</text>')
            fps = _fps(row, name)
            if row["page"] == "animated" and fps is not None:
                out.append(f'<text x="{x + bar_w / 2:.1f}" y="{plot_bottom - h - 18:.1f}" font-size="10" '
                           f'fill="#666" text-anchor="middle">{fps:.0f} fps</text>')
        lines = label.split("\n")
        cx = left + i * group_w + group_w / 2
        for k, text in enumerate(lines):
            out.append(f'<text x="{cx:.1f}" y="{plot_bottom + 20 + 16 * k}" font-size="13" text-anchor="middle">'
                       f'{escape(text)}</text>')
    out.append(f'<line x1="{left}" x2="{right}" y1="{plot_bottom}" y2="{plot_bottom}" stroke="#333"/>')
    lx = left
    for name, colour in SERIES:
        label = {"framestream": "framestream (service)", "ffmpeg": "ffmpeg x11grab + libx264 ultrafast",
                 "selkies": "Selkies 2.x damage-only"}[name]
        out.append(f'<rect x="{lx}" y="{H - 32}" width="14" height="14" fill="{colour}"/>')
        out.append(f'<text x="{lx + 20}" y="{H - 20}" font-size="13">{escape(label)}</text>')
        lx += 30 + 8 * len(label)
    out.append("</svg>")
    return "\n".join(out)


def _subtitle(results: dict[str, Any]) -> str:
    m = results.get("machine", {})
    return (f"{results.get('started', '')}, {m.get('cores', '?')} x {m.get('cpu', '?')}; same page and display size "
            f"per group, one viewer; Chromium's own CPU excluded for all three")


def _tick_step(top: float) -> float:
    for step in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0):
        if top / step <= 8:
            return step
    return 1.0


def render_png(svg_text: str, out: Path, chrome: str | None = None) -> None:
    chrome = chrome or os.environ.get("CHROME_PATH", "/usr/bin/chromium")
    with tempfile.TemporaryDirectory(prefix="fs-chart-") as tmp:
        src = Path(tmp) / "chart.svg"
        src.write_text(svg_text)
        argv = [chrome, "--headless=new", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                f"--user-data-dir={tmp}/profile", f"--window-size={W},{H}", f"--screenshot={out.resolve()}",
                "--default-background-color=ffffffff", src.as_uri()]
        if os.geteuid() == 0:
            argv.insert(1, "--no-sandbox")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            pass
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if not out.exists():
        raise RuntimeError(f"Chromium wrote no {out}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    src = Path(args[0]) if args else latest()
    out = Path(args[1]) if len(args) > 1 else ROOT / "docs" / "performance-cpu.png"
    results = json.loads(src.read_text())
    if not results.get("cpu"):
        print(f"{src} has no cpu section", file=sys.stderr)
        return 1
    render_png(svg(results), out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
