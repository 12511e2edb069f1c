"""One recording's files, written in a thread of its own: fragmented MP4 pictures and sidecar lines.

`FrameRecorder` (recording/recorder.py) only queues on the event loop; this thread does every write, so a slow or
full disk never holds up the loop, the encoder or a viewer. A write that fails (a full disk) ends the recording,
cut to its last whole fragment.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

from framestream.recording import mp4
from framestream.recording.sidecar import Line, dumps
from framestream.recording.store import RecordingInfo, RecordingStore

log = logging.getLogger("framestream.recording")

FRAGMENT_S = 1.0  # a fragment reaches the file at most this long after its first picture
QUEUE_MAX_BYTES = 64 * 1024 * 1024  # a disk this far behind ends the recording
LAST_PICTURE_TICKS = mp4.TIMESCALE // 30  # how long a fragment's last picture lasts when none follows yet


def now_us() -> int:
    return time.time_ns() // 1000


class RecordingWriter(threading.Thread):
    """One recording's files, written in its own thread from a queue; ends on `close` or a failed write."""

    def __init__(self, store: RecordingStore, info: RecordingInfo, head: mp4.Header) -> None:
        super().__init__(name=f"record-{info.frame}", daemon=True)
        self.store = store
        self.info = info
        self._head = head
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._queued = 0
        self._queued_lock = threading.Lock()
        self.done = False  # it stopped writing (closed, or a write failed)
        self.reason: str | None = None
        # writer-thread state
        self._pending: list[tuple[int, bool, bytes]] = []  # (dts, keyframe, data) not yet in a fragment
        self._pending_since = 0.0
        self._last_dts = -1
        self._written_end = 0  # where the last fragment ended (ticks)
        self._sequence = 0
        self._video_fd = -1
        self._sidecar_fd = -1
        self._fragments = 0
        self._full = False

    # -- loop side -----------------------------------------------------------------------------------------

    def picture(self, capture_us: int, keyframe: bool, data: bytes) -> None:
        with self._queued_lock:
            if self.done:
                return
            if self._queued + len(data) > QUEUE_MAX_BYTES:
                self.done, self.reason = True, "disk-too-slow"
                self._queue.put(("end", "disk-too-slow"))
                return
            self._queued += len(data)
        self._queue.put(("picture", (capture_us, keyframe, data)))

    def lines(self, lines: Sequence[Line]) -> None:
        if not self.done:
            self._queue.put(("lines", list(lines)))

    def close(self, reason: str) -> None:
        self._queue.put(("end", reason))

    # -- the thread ----------------------------------------------------------------------------------------

    def run(self) -> None:
        reason = "stopped"
        try:
            self._open()
            while True:
                timeout = None
                if self._pending:
                    timeout = max(0.0, self._pending_since + FRAGMENT_S - time.monotonic())
                try:
                    kind, item = self._queue.get(timeout=timeout)
                except queue.Empty:
                    self._flush()
                    continue
                if kind == "picture":
                    with self._queued_lock:
                        self._queued -= len(item[2])
                    self._add(*item)
                elif kind == "lines":
                    self._write_lines(item)
                else:
                    reason = str(item)
                    if self._pending:  # the last picture shows until the recording ends
                        self._flush(until=max(mp4.ticks(now_us() - self.info.start_us), self._pending[-1][0] + 1))
                    break
                if self._pending and time.monotonic() - self._pending_since >= FRAGMENT_S:
                    self._flush()
                if self._full:
                    reason = "max-bytes"
                    break
        except OSError as exc:
            reason = "disk"
            self.store.write_errors += 1
            log.warning("recording %s stopped: %s (the frame goes on streaming)", self.info.id, exc,
                        extra={"frame": self.info.frame})
            self._cut_to_whole()
        finally:
            with self._queued_lock:
                self.done = True
                self.reason = self.reason or reason
            self._finish(self.reason or reason)

    def _open(self) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        self._video_fd = os.open(self.store.video_path(self.info), flags, 0o600)
        self._sidecar_fd = os.open(self.store.sidecar_path(self.info), flags | os.O_APPEND, 0o600)
        self._write_all(self._video_fd, self._head.data)
        self.info.bytes = len(self._head.data)

    def _add(self, capture_us: int, keyframe: bool, data: bytes) -> None:
        dts = max(mp4.ticks(capture_us - self.info.start_us), self._last_dts + 1, self._written_end)
        if keyframe and self._pending:
            self._flush(until=dts)  # every keyframe starts a fragment: a seek's way in
        if not self._pending:
            self._pending_since = time.monotonic()
        self._pending.append((dts, keyframe, mp4.to_length_prefixed(data)))
        self._last_dts = dts

    def _flush(self, until: int | None = None) -> None:
        """Write what is pending as one fragment; the last picture lasts until `until`, or one picture's time: a
        still stretch after it is a gap before the next fragment's start time (its `tfdt`), and a picture that
        shows a change made before the fragment was cut (patches covered late) still goes at its own time."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        end = until if until is not None else pending[-1][0] + LAST_PICTURE_TICKS
        samples = [mp4.Sample(dts, (pending[i + 1][0] if i + 1 < len(pending) else end) - dts, key, data)
                   for i, (dts, key, data) in enumerate(pending)]
        data = mp4.fragment(self._sequence + 1, samples)
        if self.info.bytes + self.info.sidecar_bytes + len(data) > self.store.max_bytes:
            self._full = True  # this recording alone would pass FRAMESTREAM_RECORD_MAX_BYTES: it ends before
            return
        self._sequence += 1
        self._write_all(self._video_fd, data)  # one write: a kill leaves whole fragments and perhaps a cut tail
        self.info.bytes += len(data)
        self._written_end = end
        mvhd, mehd = mp4.duration_fields(end)
        os.pwrite(self._video_fd, mvhd, self._head.mvhd_duration_at)
        os.pwrite(self._video_fd, mehd, self._head.mehd_duration_at)
        self._fragments += 1
        if self._fragments % 8 == 0:
            self.store.enforce()

    def _write_lines(self, lines: Sequence[Line]) -> None:
        data = b"".join(dumps(line) for line in lines)
        self._write_all(self._sidecar_fd, data)
        self.info.sidecar_bytes += len(data)

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def _cut_to_whole(self) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(self._video_fd, self.info.bytes)  # (bytes counts whole fragments only)

    def _finish(self, reason: str) -> None:
        self._pending = []
        for fd in (self._video_fd, self._sidecar_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.fsync(fd)
                with contextlib.suppress(OSError):
                    os.close(fd)
        info = self.info
        info.end_us = max(info.start_us + mp4.microseconds(self._written_end), info.start_us)
        info.reason = reason
        self.store.save_meta(info)
        with contextlib.suppress(OSError):
            self.store.enforce()


__all__ = ["FRAGMENT_S", "LAST_PICTURE_TICKS", "QUEUE_MAX_BYTES", "RecordingWriter", "now_us"]
