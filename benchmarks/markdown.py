"""Prints a results file's tables as Markdown (what docs/performance.md quotes), or compares two runs.

    .venv/bin/python -m benchmarks.markdown [RESULTS.json]   # default: the newest run (benchmarks/saving.py)
    .venv/bin/python -m benchmarks.markdown --compare BEFORE.json AFTER.json
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.run import render
from benchmarks.saving import latest


def markdown(results: dict[str, Any]) -> str:
    report.MARKDOWN = True
    out: list[str] = []
    for printed in render(results).splitlines():
        is_row = printed.startswith("|")
        # The printed section titles become headings.
        line = "#### " + printed if re.match(r"\d+b?\. |Targets ", printed) else printed
        if out and out[-1] and out[-1].startswith("|") != is_row:
            out.append("")  # Markdown wants tables set apart from text
        out.append(line)
    return "\n".join(out)


Getter = Callable[[dict[str, Any]], Any]


def _animated(size: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda r: next(x for x in r["cpu"] if x["size"].split(" ")[0] == size and x["page"] == "animated")


def _cpu_figures(size: str) -> list[tuple[str, Getter]]:
    row = _animated(size)

    def fps(r: dict[str, Any]) -> Any:
        return row(r)["framestream"]["stream"]["fps"]

    def vcpu(r: dict[str, Any]) -> Any:
        return row(r)["framestream"]["cpu"]["service"]

    def per_picture(r: dict[str, Any]) -> Any:
        return report.per_picture(row(r), "framestream")[1]

    def vs_selkies(r: dict[str, Any]) -> Any:
        return row(r)["ratio_selkies"]

    def vs_selkies_per_picture(r: dict[str, Any]) -> Any:
        return _ratio(report.per_picture(row(r), "framestream")[1], report.per_picture(row(r), "selkies")[1])

    def capture_to_recv(r: dict[str, Any]) -> Any:
        return row(r)["framestream"]["stream"]["capture_to_recv_ms"]["p50"]

    return [(f"animated {size}: fps delivered", fps), (f"animated {size}: service vCPU", vcpu),
            (f"animated {size}: CPU ms per picture", per_picture), (f"animated {size}: vs Selkies (vCPU)", vs_selkies),
            (f"animated {size}: vs Selkies (per picture)", vs_selkies_per_picture),
            (f"animated {size}: capture->recv p50 ms", capture_to_recv)]


def _still_psnr(size: str) -> Getter:
    return lambda r: next(x for x in r["quality"]["still"] if x["size"] == size)["psnr_db"]


def _latency(index: int) -> Getter:
    return lambda r: "{p50} / {p95}".format(**r["latency"][index]["input_to_picture_ms"])


def compare(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Key figures of two runs side by side (before and after a change)."""
    rows: list[tuple[str, Getter]] = []
    for size in ("640x400", "1280x800", "1280x800@2x"):
        rows += _cpu_figures(size)
    rows += [
        ("still text PSNR dB 1280x800", _still_psnr("1280x800@1x")),
        ("still text PSNR dB 1280x800@2x", _still_psnr("1280x800@2x")),
        ("scrolling text PSNR dB 1280x800",
         lambda r: next(a for a in r["quality"]["animated"] if a["page"] == "scroll.html")["psnr_db"]),
        ("input->picture p50 / p95 ms 1280x800", _latency(0)),
        ("input->picture p50 / p95 ms 1280x800@2x", _latency(1)),
        ("50 viewers / 1 viewer (service vCPU)", lambda r: r["fanout"]["levels"][-1]["vs_one_viewer"]),
        ("6 animated frames: fps min", lambda r: r["scale"]["fps_min"]),
        ("resume -> keyframe ms (median)", lambda r: r["lifecycle"]["resume_ms"]["median"]),
        ("reopen -> keyframe ms (median)", lambda r: r["lifecycle"]["reopen_ms"]["median"]),
    ]
    out = [f"| figure | before ({before['commit']}) | after ({after['commit']}) |", "|---|---|---|"]
    for label, get in rows:
        out.append(f"| {label} | {_get(get, before)} | {_get(get, after)} |")
    return "\n".join(out)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def _get(get: Callable[[dict[str, Any]], Any], results: dict[str, Any]) -> str:
    try:
        value = get(results)
    except (KeyError, StopIteration, IndexError, TypeError):
        return "-"
    return "-" if value is None else str(value)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--compare"]:
        before, after = (json.loads(Path(p).read_text()) for p in args[1:3])
        print(compare(before, after))
        return 0
    path = Path(args[0]) if args else latest()
    print(markdown(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
