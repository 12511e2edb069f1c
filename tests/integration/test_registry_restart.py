"""No frame is ever lost to its history or to a restart: `--frame` names one frame across restarts, a frame's URL
is only ever a page it may reopen at, and a registry entry that cannot be restored is kept, not dropped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from framestream.client import BadInput, Client
from tests.support import Service

pytestmark = pytest.mark.integration


@pytest.fixture
def restartable(tmp_path: Path, pages: str) -> Iterator[Service]:
    svc = Service(tmp_path / "state", frames=[f"{pages}/tab.html@640x400"], pages=pages)
    try:
        yield svc
    finally:
        if svc.proc is not None and svc.proc.poll() is None:
            svc.stop()
        svc.kill_leftovers()


async def test_restarts_keep_one_frame_for_each_frame_flag_at_its_last_good_url(restartable: Service,
                                                                               pages: str) -> None:
    svc = restartable.start()
    [frame] = svc.frame_ids()
    await svc.wait_state_async(frame, "live")
    async with await Client.connect(svc.base, token=svc.token("drive", frame=frame),
                                    grants=svc.token("drive", frame=frame), reconnect=False) as client:
        await client.watch(frame)
        # Back on the frame's first page goes nowhere: its history starts at its URL.
        with pytest.raises(BadInput):
            await client.navigate(frame, action="back")
        await client.navigate(frame, f"{pages}/tab_new.html")
    svc.stop()

    registry = json.loads((svc.state_dir / "frames.json").read_text())
    assert [f["url"] for f in registry["frames"]] == [f"{pages}/tab_new.html"]
    registry["frames"].append({"id": "gone1", "url": "about:blank", "width": 640, "height": 400, "dpr": 1})
    (svc.state_dir / "frames.json").write_text(json.dumps(registry))
    (svc.state_dir / "profiles" / "gone1").mkdir(parents=True)

    svc.start()
    assert svc.frame_ids() == [frame], "the same --frame keeps its frame, id and profile"
    status, body = svc.get(f"/frames/{frame}")
    assert status == 200 and body["url"] == f"{pages}/tab_new.html"
    status, health = svc.get("/healthz", token=None)
    assert health["unrestorable_frames"] == ["gone1"]
    svc.stop()
    kept = json.loads((svc.state_dir / "frames.json").read_text())["frames"]
    assert [f["id"] for f in kept] == [frame, "gone1"], "an entry that cannot be restored is kept"
    assert (svc.state_dir / "profiles" / "gone1").is_dir()
