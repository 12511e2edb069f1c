"""A frame's X display takes only clients holding its own cookie (issue 32, #3): before, any local user could
connect to a frame's Xvfb and read its screen (`import -window root`). The frame keeps streaming meanwhile."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient, browser_pid, colour_near

service = service_fixture("box.html@320x200")


def browser_env(service: Service, frame_id: str) -> dict[str, str]:
    with open(f"/proc/{browser_pid(service, frame_id)}/environ", "rb") as fh:
        return {k.decode(): v.decode() for k, _, v in (item.partition(b"=") for item in fh.read().split(b"\0"))
                if k}


def xdpyinfo(display: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["xdpyinfo", "-display", display], env=env, capture_output=True, text=True, timeout=20,
                          check=False)


async def test_a_frames_display_refuses_clients_without_its_cookie(service: Service, tmp_path: Path) -> None:
    (frame_id,) = service.frame_ids()
    env = browser_env(service, frame_id)
    display, cookie_file = env["DISPLAY"], env.get("XAUTHORITY")
    assert cookie_file and (os.stat(cookie_file).st_mode & 0o077) == 0, f"a private cookie file: {cookie_file}"
    assert (os.stat(Path(cookie_file).parent).st_mode & 0o077) == 0, "in a private directory"
    stranger = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}  # no cookie, no ~/.Xauthority
    refused = xdpyinfo(display, stranger)
    assert refused.returncode != 0, f"a client without the cookie got in:\n{refused.stdout[:500]}"
    forged = tmp_path / "forged.xauth"
    forged.write_bytes(bytes.fromhex("ffff0000000000124d49542d4d414749432d434f4f4b49452d310010") + os.urandom(16))
    assert xdpyinfo(display, {**stranger, "XAUTHORITY": str(forged)}).returncode != 0, "a guessed cookie got in"
    allowed = xdpyinfo(display, {**stranger, "XAUTHORITY": cookie_file})
    assert allowed.returncode == 0 and "screen #0" in allowed.stdout, allowed.stderr
    # And the frame still streams its page.
    viewer = await StreamClient.connect(service)
    await viewer.watch(frame_id)
    picture = await viewer.latest_picture()
    assert colour_near(picture[200, 400], (200, 40, 40))  # box.html's box, at dpr 2


@pytest.fixture(autouse=True)
def _needs_xdpyinfo() -> None:
    assert subprocess.run(["which", "xdpyinfo"], capture_output=True, check=False).returncode == 0, \
        "xdpyinfo (x11-utils) is installed by `make test`"
