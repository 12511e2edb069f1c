"""Where the benchmarks write their results files.

A run goes to benchmarks/results/local/ (ignored by git), so trying things never adds files to the repository.
A run meant to be quoted in docs/performance.md is recorded: `--record` (`make bench RECORD=1`) writes it into
benchmarks/results/, beside the runs the page quotes, to be committed with the page.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).resolve().parent / "results"
LOCAL = RECORDED / "local"


def add_record_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--record", action="store_true",
                        help="write the results into benchmarks/results/ (committed) instead of "
                             "benchmarks/results/local/ (ignored)")


def results_dir(record: bool) -> Path:
    folder = RECORDED if record else LOCAL
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def write_json(path: Path, results: dict[str, Any], indent: int = 1) -> None:
    """Whole or not at all: a run stopped while writing leaves no truncated file behind."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=indent) + "\n")
    os.replace(tmp, path)


def latest() -> Path:
    """The newest `make bench` run: this checkout's own (local/latest.json, written by every run, recorded or
    not) if it made one, else the newest recorded one."""
    if (LOCAL / "latest.json").exists():
        return LOCAL / "latest.json"
    return max(RECORDED.glob("2*Z.json"))
