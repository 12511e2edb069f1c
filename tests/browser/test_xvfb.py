"""Xvfb started by the one -displayfd helper, without asyncio (as the capture tests and benchmarks start it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from framestream.browser.proctable import in_group, read_process
from framestream.browser.xvfb import XvfbDisplay, XvfbServer, xvfb_command
from framestream.core.errors import BrowserError


def test_a_server_tells_its_display_and_is_ended_by_kill() -> None:
    server = XvfbServer.start(320, 200, "-dpi", "96")
    try:
        info = read_process(server.pid)
        assert info is not None and info.ppid == os.getpid()
        assert info.args[-2:] == [b"-dpi", b"96"] and b"320x200x24" in info.args
        # It said its number once it accepted clients: its socket is there.
        assert Path(f"/tmp/.X11-unix/X{server.number}").exists()
        assert server.name == f":{server.number}"
    finally:
        server.kill()
    assert server.proc.returncode is not None and read_process(server.pid) is None
    server.kill()  # again: nothing left to do


def test_two_servers_get_two_displays() -> None:
    first = XvfbServer.start(64, 64)
    try:
        second = XvfbServer.start(64, 64)
        second.kill()
    finally:
        first.kill()
    assert first.number != second.number


def test_a_server_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BrowserError, match="cannot start Xvfb"):
        XvfbServer.start(64, 64, xvfb_path=str(tmp_path / "no-such-xvfb"))
    # One that exits before telling its display (an unknown flag) is an error too, not a hang.
    with pytest.raises(BrowserError, match="exited before it was ready"):
        XvfbServer.start(64, 64, "-no-such-flag")


def test_the_command_line_asks_for_the_display_on_the_given_fd() -> None:
    argv = xvfb_command(640, 400, 7, xvfb_path="/usr/bin/Xvfb", extra=["+extension", "DAMAGE"])
    assert argv[:3] == ["/usr/bin/Xvfb", "-displayfd", "7"]
    assert argv[argv.index("-screen") + 2] == "640x400x24"
    assert argv[-2:] == ["+extension", "DAMAGE"]


async def test_the_service_display_is_one_pixel_larger_and_ends_with_its_group() -> None:
    display = await XvfbDisplay.start(320, 200, refresh_hz=0)
    try:
        info = read_process(display.pid)
        assert info is not None and info.pgrp == display.pid  # a session of its own
        assert b"321x201x24" in info.args and b"DAMAGE" in info.args
        assert display.alive and display.name == f":{display.number}"
    finally:
        await display.stop()
    assert not display.alive and in_group(display.pid) == []
