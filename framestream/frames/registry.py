"""frames.json: which frames exist (id, last URL, size, when last viewed), so they come back after a restart.

Written atomically (statefile: unique temp, fsync, rename) in a worker thread, so a slow disk never stalls the
loop; saves land in order. A full or read-only state dir costs nothing but the save: the last whole copy stays,
one error is logged per outage, `write_error` says so (for /healthz and /metrics), and the save is retried every
`retry_s` until it lands.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from framestream.frames.urls import check_url
from framestream.service.config import FrameSize
from framestream.service.statefile import remove_leftover_temps, write_json_atomically

log = logging.getLogger("framestream.frames")  # one logger for a frame's whole story

SAVE_RETRY_S = 2.0  # how often a failed registry write is tried again


@dataclass(frozen=True, slots=True)
class SavedFrame:
    id: str
    url: str
    size: FrameSize
    last_viewed: float  # monotonic seconds (the file holds wall-clock seconds)
    created_url: str = ""  # what the frame was created at (`--frame URL` names it again after a restart)
    record: bool | None = None  # `"record"` of POST /frames (None: FRAMESTREAM_RECORD decides)


class Registry:
    """The registry file of one state dir. `snapshot` lists the frames as they are now; `spawn` runs a save in
    the background as a task its owner ends at shutdown."""

    def __init__(self, path: Path, snapshot: Callable[[], list[SavedFrame]],
                 spawn: Callable[[Coroutine[Any, Any, None], str], object], *, retry_s: float = SAVE_RETRY_S,
                 allowed_hosts: Sequence[str] = ()) -> None:
        self.path = path
        self._allowed_hosts = allowed_hosts
        self._snapshot = snapshot
        self._spawn = spawn
        self._retry_s = retry_s
        self._handle: asyncio.TimerHandle | None = None
        self.lock = asyncio.Lock()  # held while a save is under way: an older snapshot never lands after a newer
        self.closed = False  # no more saves scheduled (shutdown)
        self.write_errors = 0  # failed writes (for /metrics)
        self.write_error: str | None = None  # the last one, until a write succeeds again
        # Entries that cannot be restored (a URL no longer allowed, a size out of range): kept as they were and
        # written back, never dropped, so neither they nor their profiles are lost; reported in /healthz.
        self.unrestorable: list[dict[str, Any]] = []

    def load(self) -> list[SavedFrame]:
        """The frames of the last run, with temp files of interrupted saves removed; entries that do not make
        sense are kept aside (`unrestorable`) with a warning, an unreadable file is logged and treated as empty."""
        remove_leftover_temps(self.path)
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.error("frame registry %s is unreadable (%s); starting with no frames", self.path, exc)
            return []
        now_wall, now = time.time(), time.monotonic()
        frames = []
        for item in data.get("frames", []):
            try:
                size = FrameSize(int(item["width"]), int(item["height"]), int(item["dpr"]))
                viewed_ago = max(0.0, now_wall - float(item.get("last_viewed", now_wall)))
                url = check_url(item["url"], self._allowed_hosts)
                created = item.get("created_url")
                record = item.get("record")
                frames.append(SavedFrame(str(item["id"]), url, size, now - viewed_ago,
                                         created if isinstance(created, str) else url,
                                         record if isinstance(record, bool) else None))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                log.warning("cannot restore a frame of the registry (%s); it is kept as it is", exc)
                if isinstance(item, dict):
                    self.unrestorable.append(item)
        return frames

    def save_soon(self, delay: float = 0.2) -> None:
        if self._handle is None and not self.closed:
            self._handle = asyncio.get_running_loop().call_later(delay, self._save_now)

    def _save_now(self) -> None:
        self._handle = None
        self._spawn(self.save_in_background(), "save-registry")

    async def save_in_background(self) -> None:
        """Save with the disk work (write, fsync, rename) off the event loop."""
        async with self.lock:
            data = self._contents()
            try:
                await asyncio.to_thread(write_json_atomically, self.path, data)
            except OSError as exc:
                self._failed(exc)
            else:
                self._saved()

    def save(self) -> None:
        """Save now, on this thread (at shutdown, when nothing else runs)."""
        try:
            write_json_atomically(self.path, self._contents())
        except OSError as exc:
            self._failed(exc)
        else:
            self._saved()

    def close(self) -> None:
        """Schedule no more saves (the owner makes the last one itself)."""
        self.closed = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _contents(self) -> dict[str, Any]:
        now_wall, now = time.time(), time.monotonic()
        return {
            "version": 1,
            "frames": [
                *({"id": f.id, "url": f.url, "created_url": f.created_url or f.url, "width": f.size.css_width,
                   "height": f.size.css_height, "dpr": f.size.dpr, "last_viewed": now_wall - (now - f.last_viewed),
                   **({} if f.record is None else {"record": f.record})}
                  for f in self._snapshot()),
                *self.unrestorable,
            ],
        }

    def _failed(self, exc: OSError) -> None:
        self.write_errors += 1
        if self.write_error is None:  # once per outage, not once per save
            log.error("cannot save the frame registry to %s: %s; the last saved copy is kept and frames keep "
                      "streaming", self.path, exc.strerror or exc)
        self.write_error = f"{exc.strerror or exc}"
        with contextlib.suppress(RuntimeError):  # no loop: at shutdown there is no later
            self.save_soon(self._retry_s)  # catch up by itself once space or write access is back

    def _saved(self) -> None:
        if self.write_error is not None:
            log.warning("the frame registry is saved again to %s", self.path)
            self.write_error = None


__all__ = ["SAVE_RETRY_S", "Registry", "SavedFrame"]
