"""Where recordings live: `<state dir>/recordings/<frame>/<id>.mp4`, its sidecar `<id>.jsonl` and its description
`<id>.json`. The store lists, deletes and ages them out (retention.py) and signs the short-lived links a browser's
`<video>` fetches them with (it cannot send an Authorization header).

One lock guards the index: the loop (routes), the writers' threads (a recording's end, retention) and a
recording's first start (the scan of what a previous run left, whose unfinished files are cut to their last whole
fragment) all use it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from framestream.recording import mp4
from framestream.recording.retention import Held, to_delete
from framestream.service.statefile import write_json_atomically

log = logging.getLogger("framestream.recording")

ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TICKET_TTL_S = 600.0  # a media link stays good this long (a view token's lifetime)


@dataclass
class RecordingInfo:
    frame: str
    id: str
    start_us: int
    width: int
    height: int
    css_width: int
    css_height: int
    dpr: int
    end_us: int | None = None  # None while it is being written
    bytes: int = 0  # of the MP4, whole fragments only
    sidecar_bytes: int = 0
    steps: int = 0
    reason: str | None = None  # why it ended: paused, closed, launching, error, disk, max-bytes, shutdown, ...

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "frame": self.frame, "start_us": self.start_us, "end_us": self.end_us,
                "bytes": self.bytes, "steps": self.steps, "active": self.end_us is None, "reason": self.reason,
                "width": self.width, "height": self.height, "css_width": self.css_width,
                "css_height": self.css_height, "dpr": self.dpr}


class RecordingStore:
    def __init__(self, root: Path, secret: bytes, *, max_bytes: int, max_age_s: float | None) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self._ticket_key = hmac.new(secret, b"framestream/recording-link", hashlib.sha256).digest()
        self._lock = threading.Lock()
        self._index: dict[tuple[str, str], RecordingInfo] = {}
        self._loaded = False
        self.write_errors = 0

    # -- paths ---------------------------------------------------------------------------------------------

    def folder(self, frame_id: str) -> Path:
        return self.root / frame_id

    def video_path(self, info: RecordingInfo) -> Path:
        return self.folder(info.frame) / f"{info.id}.mp4"

    def sidecar_path(self, info: RecordingInfo) -> Path:
        return self.folder(info.frame) / f"{info.id}.jsonl"

    def _meta_path(self, info: RecordingInfo) -> Path:
        return self.folder(info.frame) / f"{info.id}.json"

    # -- the index -----------------------------------------------------------------------------------------

    def begin(self, frame_id: str, *, start_us: int, width: int, height: int, css_width: int, css_height: int,
              dpr: int) -> RecordingInfo:
        """A new recording's entry (its files are the writer's to make)."""
        self._load()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(start_us / 1e6))
        info = RecordingInfo(frame_id, f"{stamp}Z-{secrets.token_hex(3)}", start_us, width, height, css_width,
                             css_height, dpr)
        self.folder(frame_id).mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._lock:
            self._index[(frame_id, info.id)] = info
        self.save_meta(info)
        return info

    def save_meta(self, info: RecordingInfo) -> None:
        try:
            write_json_atomically(self._meta_path(info), asdict(info))
        except OSError as exc:  # a full disk: the index in memory still has it
            self.write_errors += 1
            log.warning("could not write %s: %s", self._meta_path(info).name, exc, extra={"frame": info.frame})

    def of_frame(self, frame_id: str) -> list[RecordingInfo]:
        self._load()
        with self._lock:
            return sorted((i for i in self._index.values() if i.frame == frame_id), key=lambda i: i.start_us)

    def get(self, frame_id: str, recording_id: str) -> RecordingInfo | None:
        if not ID_PATTERN.match(recording_id):
            return None
        self._load()
        with self._lock:
            return self._index.get((frame_id, recording_id))

    def delete(self, info: RecordingInfo) -> None:
        with self._lock:
            self._index.pop((info.frame, info.id), None)
        for path in (self.video_path(info), self.sidecar_path(info), self._meta_path(info)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def total_bytes(self) -> int:
        with self._lock:
            return sum(i.bytes + i.sidecar_bytes for i in self._index.values())

    def enforce(self, now_us: int | None = None) -> list[tuple[str, str]]:
        """Apply retention (FRAMESTREAM_RECORD_MAX_BYTES, FRAMESTREAM_RECORD_MAX_AGE_S): the oldest go first."""
        self._load()
        now_us = time.time_ns() // 1000 if now_us is None else now_us
        with self._lock:
            held = [Held((i.frame, i.id), i.start_us, i.end_us, i.bytes + i.sidecar_bytes)
                    for i in self._index.values()]
            infos = dict(self._index)
        gone = to_delete(held, now_us=now_us, max_bytes=self.max_bytes, max_age_s=self.max_age_s)
        for key in gone:
            log.info("recording %s deleted by retention", key[1], extra={"frame": key[0]})
            self.delete(infos[key])
        return gone

    def _load(self) -> None:
        """Once: what earlier runs left. A recording a killed service was writing is cut to its last whole fragment
        and ended at the last line of its sidecar (or its file's last change)."""
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            try:
                metas = sorted(self.root.glob("*/*.json")) if self.root.is_dir() else []
            except OSError as exc:
                log.warning("cannot read the recordings in %s: %s", self.root, exc)
                metas = []
            for meta in metas:
                info = self._read(meta)
                if info is not None:
                    self._index[(info.frame, info.id)] = info

    def _read(self, meta: Path) -> RecordingInfo | None:
        try:
            info = RecordingInfo(**json.loads(meta.read_text()))
        except (OSError, ValueError, TypeError) as exc:
            log.warning("ignoring %s: %s", meta, exc)
            return None
        if info.frame != meta.parent.name or info.id != meta.stem or not ID_PATTERN.match(info.id):
            return None
        video, sidecar = meta.with_suffix(".mp4"), meta.with_suffix(".jsonl")
        try:
            info.sidecar_bytes = sidecar.stat().st_size if sidecar.exists() else 0
            if info.end_us is None:  # left by a run that ended without closing it
                whole = mp4.whole_length(str(video)) if video.exists() else 0
                if video.exists() and whole < video.stat().st_size:
                    os.truncate(video, whole)
                info.bytes = whole
                info.end_us, info.steps = _sidecar_end(sidecar, info.start_us)
                if video.exists():
                    info.end_us = max(info.end_us, int(video.stat().st_mtime * 1e6))
                info.reason = "interrupted"
                with contextlib.suppress(OSError):
                    write_json_atomically(meta, asdict(info))
            elif video.exists():
                info.bytes = video.stat().st_size
        except OSError as exc:
            log.warning("ignoring %s: %s", meta, exc)
            return None
        return info

    # -- links for <video> ---------------------------------------------------------------------------------

    def ticket(self, info: RecordingInfo, now: float | None = None) -> str:
        """A link's proof, good for this one recording's video for TICKET_TTL_S: `<exp>.<mac>`."""
        exp = int((time.time() if now is None else now) + TICKET_TTL_S)
        return f"{exp}.{self._mac(info, exp)}"

    def check_ticket(self, info: RecordingInfo, ticket: str, now: float | None = None) -> str | None:
        """None when `ticket` is good for `info`; else the code to refuse with (`unauthorized`, `expired`)."""
        exp_text, _, mac = ticket.partition(".")
        if not exp_text.isdigit() or len(ticket) > 128:
            return "unauthorized"
        if not hmac.compare_digest(mac, self._mac(info, int(exp_text))):
            return "unauthorized"
        if (time.time() if now is None else now) > int(exp_text):
            return "expired"
        return None

    def _mac(self, info: RecordingInfo, exp: int) -> str:
        digest = hmac.new(self._ticket_key, f"{info.frame}/{info.id}/{exp}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:18]).decode().rstrip("=")


def _sidecar_end(sidecar: Path, start_us: int) -> tuple[int, int]:
    """The time of the sidecar's last line and how many steps it lists."""
    end, steps = start_us, 0
    try:
        with open(sidecar, "rb") as f:
            for raw in f:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue  # a line cut by the kill
                if isinstance(line, dict):
                    end = max(end, int(line.get("end_us") or line.get("t_us") or 0))
                    steps += line.get("type") == "step"
    except OSError:
        pass
    return end, steps
