"""A frame's children (browser/process.py): the environment they start with, allow-listed, never the service's
own; and how their process group is ended."""

from __future__ import annotations

from pathlib import Path

from framestream.browser.process import child_environment, group_ended, spawn, terminate_group


def test_a_child_gets_only_the_allow_listed_variables_and_its_own() -> None:
    parent = {"PATH": "/usr/bin", "HOME": "/home/f", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC",
              "XAUTHORITY": "/run/x/cookie", "TERMINAL_AUTH_SECRET": "s" * 40, "SANDBOX_ID": "sbx",
              "FRAMESTREAM_STATE_DIR": "/state", "AWS_SECRET_ACCESS_KEY": "k", "WAYLAND_DISPLAY": "wayland-0",
              "DISPLAY": ":0", "LD_PRELOAD": "/tmp/evil.so", "PYTHONPATH": "/x"}
    env = child_environment({"DISPLAY": ":7"}, parent=parent)
    # (not XAUTHORITY: the service's holds every display's cookie; each child is given its own display's)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/f", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC",
                   "DISPLAY": ":7"}
    assert child_environment(parent={}) == {}


async def test_a_group_whose_leader_exited_is_left_to_end_its_helpers_before_it_is_ended(tmp_path: Path) -> None:
    """As Chromium's storage service outlives the browser process while it writes: ending the group the moment
    the leader exits kills a helper mid-write; `group_ended` waits for it (bounded) and says whether it ended."""
    done = tmp_path / "written"
    proc = await spawn(["sh", "-c", f"(sleep 0.3; echo flushed > {done}) & exit 0"])
    await proc.wait()  # the leader is gone, its helper still running
    assert await group_ended(proc.pid, within=10.0)
    assert done.read_text() == "flushed\n"
    await terminate_group(proc)

    stuck = await spawn(["sh", "-c", "sleep 60 & exit 0"])
    await stuck.wait()
    assert not await group_ended(stuck.pid, within=0.2)  # bounded: a helper that never ends is not waited for
    await terminate_group(stuck)
    assert await group_ended(stuck.pid, within=5.0)
