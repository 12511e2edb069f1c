"""`"record"` of POST /frames: a frame recorded (or not) against the service's default, kept across a restart.
With fake runtimes (tests/frames/fakes.py): no browser."""

from __future__ import annotations

from pathlib import Path

from framestream.frames.manager import FrameManager
from tests.frames.fakes import SIZE, Launches, manager


async def test_record_per_frame_overrides_the_default_and_survives_a_restart(state_dir: Path,
                                                                              launches: Launches) -> None:
    first = manager(state_dir, launches, record=True)  # FRAMESTREAM_RECORD=on
    off = await first.create("http://pages.test/a", SIZE, record=False)
    default = await first.create("http://pages.test/b", SIZE)
    assert not off.recorder.enabled and default.recorder.enabled
    await first.shutdown()
    again: FrameManager = manager(state_dir, launches)  # FRAMESTREAM_RECORD off since the restart
    again.load()
    back, other = again.get(off.id), again.get(default.id)
    assert back is not None and other is not None
    assert not back.recorder.enabled and not other.recorder.enabled  # (the default follows the service)
    on = await again.create("http://pages.test/c", SIZE, record=True)
    await again.shutdown()
    third: FrameManager = manager(state_dir, launches)
    third.load()
    kept = third.get(on.id)
    assert kept is not None and kept.recorder.enabled  # asked for: kept in frames.json
    await third.shutdown()
