"""Atomic JSON state files: whole or untouched, never half; leftovers of a killed writer are swept."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from framestream.service.statefile import remove_leftover_temps, write_json_atomically


def test_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "state" / "frames.json"
    write_json_atomically(path, {"v": 1})
    write_json_atomically(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 2}
    assert sorted(p.name for p in path.parent.iterdir()) == ["frames.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "frames.json"
    write_json_atomically(path, {"v": 1})
    with pytest.raises(TypeError):
        write_json_atomically(path, {"v": object()})  # fails half-way through writing
    assert json.loads(path.read_text()) == {"v": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frames.json"]


def test_leftover_temporaries_are_removed_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "frames.json"
    write_json_atomically(path, {"v": 1})
    for name in ("frames.json.abc123.tmp", "frames.json.x.tmp", "other.json.y.tmp"):
        (tmp_path / name).write_text("{")
    assert remove_leftover_temps(path) == 2
    assert sorted(os.listdir(tmp_path)) == ["frames.json", "other.json.y.tmp"]
