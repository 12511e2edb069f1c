"""The environment a frame's children start with (browser/process.py): allow-listed, never the service's own."""

from __future__ import annotations

from framestream.browser.process import child_environment


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
