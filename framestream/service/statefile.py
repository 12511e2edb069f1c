"""Writing a small JSON state file so that it is always whole: a reader sees the old copy or the new one.

Written to a temporary file of its own in the same directory, synced, then renamed over the old one. The
temporary name is unique, so two writers (a background save and the one at shutdown) never share one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

TMP_SUFFIX = ".tmp"


def write_json_atomically(path: Path, data: Any) -> None:
    """Replace `path` with `data` as JSON; raises OSError (full, read-only, ...) and leaves the old file as it was."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # a half-written temp file must not take the space the next write needs
        raise


def remove_leftover_temps(path: Path) -> int:
    """Temporary files a killed writer left beside `path`; returns how many were removed."""
    removed = 0
    for leftover in path.parent.glob(path.name + ".*" + TMP_SUFFIX):
        with contextlib.suppress(OSError):
            leftover.unlink()
            removed += 1
    return removed
