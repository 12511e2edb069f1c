"""The recording's pure parts and its writer without a browser: retention, the sidecar's redaction, a full disk."""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from framestream.core.tokens import Claims
from framestream.core.wire import KeyEvent, PasteEvent, TextEvent
from framestream.media.encoder import H264Encoder
from framestream.recording import mp4
from framestream.recording.retention import Held, to_delete
from framestream.recording.sidecar import event_fields, step_line
from framestream.recording.store import RecordingStore
from framestream.recording.writer import RecordingWriter


def test_retention_deletes_the_oldest_finished_first_and_never_one_being_written() -> None:
    held = [Held(("f", "c"), 3, None, 50), Held(("f", "a"), 1, 2, 40), Held(("g", "b"), 2, 3, 40)]
    assert to_delete(held, now_us=10, max_bytes=200, max_age_s=None) == []
    assert to_delete(held, now_us=10, max_bytes=100, max_age_s=None) == [("f", "a")]
    assert to_delete(held, now_us=10, max_bytes=10, max_age_s=None) == [("f", "a"), ("g", "b")]
    assert to_delete(held, now_us=2_500_000, max_bytes=1000, max_age_s=2.0) == [("f", "a"), ("g", "b")]
    assert to_delete(held, now_us=1_000_000, max_bytes=1000, max_age_s=2.0) == []


def test_the_sidecar_keeps_no_secret() -> None:
    claims = Claims(v=1, sbx="s", frm="f", role="drive", sub="agent", iat=1.0, exp=2.0, jti="j", step=True)
    secret = [event_fields(e, secret=True) for e in (TextEvent("hunter2"), KeyEvent("down", "h", "KeyH"))]
    assert secret == [{"kind": "text", "redacted": True, "length": 7},
                      {"kind": "key", "action": "down", "redacted": True, "modifiers": 0}]
    assert event_fields(PasteEvent("clipboard words"), secret=False) == {"kind": "paste", "length": 15}
    line = step_line(5, 6, claims, 3, {"kind": "input", "events": secret}, error=None)
    assert "hunter2" not in json.dumps(line) and "jti" not in line and line["step"] is True


def _store(tmp_path: Path) -> RecordingStore:
    return RecordingStore(tmp_path / "recordings", b"s" * 32, max_bytes=1 << 30, max_age_s=None)


def test_a_full_disk_ends_the_recording_and_leaves_its_whole_fragments(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    encoder = H264Encoder(320, 192)
    pictures = []
    for i in range(6):
        bgrx = np.full((192, 320, 4), 40 * i, np.uint8)
        encoder.update(bgrx)
        pictures.append(encoder.encode(keyframe=i == 0).data)
    encoder.close()
    sets = mp4.parameter_sets(pictures[0])
    assert sets is not None
    t0 = time.time_ns() // 1000 - 3_000_000
    info = store.begin("f1", start_us=t0, width=320, height=192, css_width=320, css_height=192, dpr=1)
    writer = RecordingWriter(store, info, mp4.header(320, 192, *sets))
    real_write = os.write
    budget = {"left": 3}  # header, one fragment, one sidecar line; then the disk is full

    def write(fd: int, data: Any) -> int:
        if budget["left"] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        budget["left"] -= 1
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    writer.lines([{"t_us": 1, "type": "recording"}])
    writer.picture(t0, True, pictures[0])
    writer.picture(t0 + 33_000, False, pictures[1])
    writer.picture(t0 + 1_000_000, True, pictures[2])  # a keyframe: the first two go out as one fragment
    for i, data in enumerate(pictures[3:]):
        writer.picture(t0 + 1_033_000 + i * 33_000, False, data)  # the next fragment meets the full disk
    writer.close("closed")
    writer.run()  # (in this thread: the test owns no other)
    monkeypatch.undo()
    assert writer.done and writer.reason == "disk" and info.end_us is not None
    path = store.video_path(info)
    assert path.stat().st_size == info.bytes == mp4.whole_length(str(path))
    with av.open(str(path)) as container:
        assert len(list(container.decode(video=0))) == 2
    assert [i.id for i in store.of_frame("f1")] == [info.id]


def test_the_frames_events_become_sidecar_lines_without_their_text(tmp_path: Path) -> None:
    from framestream.core.lifecycle import FrameState
    from framestream.frames.browsing import ChooseFiles
    from framestream.frames.events import (
        AgentPointer,
        ClipboardCopied,
        ControlChanged,
        DownloadChanged,
        FileChooserShown,
        HelpRequested,
        StateChanged,
    )
    from framestream.recording.sidecar import EventLines, action_fields

    lines = EventLines()
    page = {"id": "p1", "url": "http://a.test/", "active": True}
    got = [
        *lines.lines(1, StateChanged("f", FrameState.LIVE, "http://a.test/", 1, None, None, [page])),
        *lines.lines(2, StateChanged("f", FrameState.LIVE, "http://a.test/", 2, None, None, [page])),  # a viewer
        *lines.lines(3, ControlChanged("f", "agent", None, kind="agent")),
        *lines.lines(4, ClipboardCopied("f", "a secret copied")),
        *lines.lines(5, DownloadChanged("f", "d1", "r.csv", 10, "done")),
        *lines.lines(6, FileChooserShown("f", "c1", "p1", False, (".png",))),
        *lines.lines(7, HelpRequested("f", "h1", "a captcha", "agent", 99)),
        *lines.lines(8, AgentPointer("f", 10.0, 20.0, "click", "agent")),
    ]
    kinds = [(line["t_us"], line["type"]) for line in got]
    assert kinds == [(1, "state"), (1, "url"), (1, "page-opened"), (1, "active-page"), (3, "driver"), (4, "clipboard"),
                     (5, "download"), (6, "file-chooser"), (7, "help-requested"), (8, "agent-pointer")], kinds
    assert got[5] == {"t_us": 4, "type": "clipboard", "length": 15}
    assert got[8]["reason"] == "a captcha" and got[9]["x"] == 10.0
    upload = tmp_path / "photo.png"
    upload.write_bytes(b"x" * 12)
    assert action_fields(ChooseFiles("c1", (upload,))) == {"kind": "upload", "id": "c1", "files": ["photo.png"],
                                                           "sizes": [12]}
    from framestream.frames.browsing import AdmitDrop, DropFiles

    assert action_fields(DropFiles(10.5, 20, (upload, tmp_path / "gone.txt"))) == {
        "kind": "drop", "x": 10.5, "y": 20, "files": ["photo.png", "gone.txt"], "sizes": [12, None]}
    assert action_fields(AdmitDrop(1, 2)) == {"kind": "drop-admitted", "x": 1, "y": 2}


def test_the_pages_cursor_becomes_sidecar_lines_as_it_changes_and_ends_with_its_browser() -> None:
    from framestream.core.lifecycle import FrameState
    from framestream.frames.events import PageCursor, StateChanged
    from framestream.recording.sidecar import EventLines

    def state(value: FrameState) -> StateChanged:
        return StateChanged("f", value, "http://a.test/", 1, None, None, None)

    lines = EventLines()
    assert lines.cursor_lines(0) == []  # a replay starts at `default`: nothing to say
    got = [
        *lines.lines(1, PageCursor("f", "pointer")),
        *lines.lines(2, PageCursor("f", "pointer")),  # told again (a viewer joined): no line
        *lines.lines(3, PageCursor("f", "text")),
    ]
    assert got == [{"t_us": 1, "type": "cursor", "cursor": "pointer"}, {"t_us": 3, "type": "cursor", "cursor": "text"}]
    lines.lines(4, state(FrameState.PAUSED))
    assert lines.cursor_lines(5) == [{"t_us": 5, "type": "cursor", "cursor": "text"}]  # the resumed recording's start
    lines.lines(6, state(FrameState.LAUNCHING))  # a new browser: its page starts at `default`
    assert lines.cursor_lines(7) == []
    assert lines.lines(8, PageCursor("f", "text")) == [{"t_us": 8, "type": "cursor", "cursor": "text"}]
