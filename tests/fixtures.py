"""The `service` fixture, made per module: which frames it starts with, its settings, and how long it lives.

    service = service_fixture("box.html@320x200", env={"FRAMESTREAM_INPUT_RATE": "100000"})

A module whose tests kill processes, restart the service or count what it did gets a fresh service per test
(the default); a module whose tests each take a fresh frame (`tests.support.FramePool`) shares one per module.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.support import Service


def service_fixture(*frames: str, env: Mapping[str, str] | None = None,
                    scope: Literal["function", "module"] = "function", pages: str = "pages",
                    timeout: float = 20.0) -> Any:
    """A `service` fixture: `framestream serve` with `env`, started within `timeout`, whose `frames` (a page of
    the `pages` fixture's server and its size, "box.html@320x200") are live before the first test uses it.
    Stopped after, and whatever it left running ended by pid."""

    @pytest.fixture(scope=scope, name="service")
    def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
        base = str(request.getfixturevalue(pages))
        svc = Service(tmp_path_factory.mktemp("state"), env_extra=dict(env or {}),
                      frames=[f"{base}/{frame}" for frame in frames], pages=base)
        try:
            svc.start(timeout)
            for frame_id in svc.frame_ids():
                svc.wait_state(frame_id, "live")
            yield svc
        finally:
            died = svc.proc is not None and svc.proc.poll() is not None
            if died:  # it ended on its own during the tests: keep its log (a native crash's stacks are in it)
                assert svc.proc is not None
                keep = Path(tempfile.gettempdir()) / "framestream-died"
                keep.mkdir(exist_ok=True)
                if svc.log_path is not None and svc.log_path.exists():
                    shutil.copy(svc.log_path, keep / f"{request.node.name}-{svc.log_path.name}")
                sys.stderr.write(f"service exited with {svc.proc.returncode} during {request.node.nodeid}:\n"
                                 f"{svc.log()[-8000:]}\n")
            if svc.proc is not None:
                svc.stop()
            svc.kill_leftovers()

    return service
