"""The sandbox image's entrypoint, run outside Docker as an unprivileged user: a live frame from it, Chromium really
sandboxed, and never a silently weaker sandbox (no user namespaces: refuse, or run without it only when asked)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import time
from pathlib import Path

import av
import numpy as np
import pytest

from framestream.browser.chrome import SANDBOX_MODES
from tests.deploy.conftest import NO_USERNS, EntrypointService, Unprivileged
from tests.deploy.files import ENTRYPOINT, dockerfile
from tests.support import colour_near, descendants, free_port, processes_using

RED = (200, 40, 40)
WHITE = (255, 255, 255)
PROBE = ["unshare", "--user", "--map-root-user", "--pid", "--net", "--fork", "true"]


def _userns_available(user: Unprivileged) -> bool:
    return user.run(PROBE, user.env()).returncode == 0


@pytest.fixture(scope="module")
def no_userns(unprivileged: Unprivileged) -> list[str]:
    """The wrapper that takes user namespaces away (checked to really do so), or a skip saying why it cannot."""
    wrap = [unprivileged.python, str(NO_USERNS)]
    done = unprivileged.run([*wrap, "true"], unprivileged.env())
    if done.returncode == 3:
        pytest.skip(f"cannot simulate a container without user namespaces here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    blocked = unprivileged.run([*wrap, *PROBE], unprivileged.env())
    assert blocked.returncode != 0, "no_userns.py left user namespaces available"
    return wrap


def _screenshot_rgb(svc: EntrypointService, frame_id: str) -> np.ndarray:
    status, png = svc.get(f"/frames/{frame_id}/screenshot")
    assert status == 200, png
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    with av.open(io.BytesIO(png)) as container:
        picture = next(container.decode(video=0))
        return picture.to_ndarray(format="rgb24")


def _live_box(svc: EntrypointService, pages: str) -> str:
    status, body = svc.request("POST", "/frames", {"url": f"{pages}/box.html", "width": 400, "height": 200})
    assert status == 201, body
    frame_id = str(body["id"])
    svc.wait_state(frame_id, "live", timeout=30)
    # box.html: rgb(200,40,40) at CSS (100..300, 50..150) on white; dpr 2 doubles every coordinate. `live` comes
    # with the page's load event; the first paint may follow a moment later.
    probes = {(200, 400): RED, (40, 40): WHITE, (320, 700): WHITE}
    deadline = time.monotonic() + 10
    while True:
        rgb = _screenshot_rgb(svc, frame_id)
        assert rgb.shape == (400, 800, 3), rgb.shape
        if all(colour_near(rgb[at], want) for at, want in probes.items()):
            return frame_id
        if time.monotonic() > deadline:
            raise AssertionError(f"screenshot never showed box.html: {[rgb[at] for at in probes]}")
        time.sleep(0.2)


def _status(pid: int) -> dict[str, str]:
    """/proc/PID/status as a dict; empty when the process is gone."""
    fields: dict[str, str] = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return fields
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _chromium(svc: EntrypointService, kind: str) -> list[tuple[int, bytes]]:
    """The service's Chromium processes: kind "browser" (no --type) or a --type value such as "renderer"."""
    assert svc.proc is not None
    found = []
    # Sandboxed renderers live in PID namespaces of their own and need not show up as descendants; they all
    # name the frame's profile under the state dir.
    for pid in sorted(set(descendants(svc.proc.pid)) | set(processes_using(str(svc.state_dir)))):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        # Zygote children rewrite their command line into one space-separated string.
        if os.path.basename(cmd.split(b"\0")[0].split(b" ")[0]) not in (b"chromium", b"chrome"):
            continue
        has_type = b"--type=" in cmd
        if (kind == "browser" and not has_type) or f"--type={kind}".encode() in cmd:
            found.append((pid, cmd))
    return found


def test_entrypoint_serves_a_live_frame_as_an_unprivileged_user_with_chromium_sandboxed(
        unprivileged: Unprivileged, services: list[EntrypointService], pages: str) -> None:
    if not _userns_available(unprivileged):
        pytest.skip("this machine gives unprivileged users no user namespaces, so Chromium's sandbox cannot run "
                    "here (the refusal and the explicit `off` are tested below)")
    svc = EntrypointService(unprivileged, "sandboxed")
    services.append(svc)
    svc.start()
    assert svc.proc is not None and svc.proc.poll() is None, svc.log()
    frame_id = _live_box(svc, pages)

    log = svc.log()
    assert f"Chromium sandbox: on (uid {unprivileged.uid}, user namespaces available)" in log, log
    assert "Chromium sandbox: OFF" not in log and "--no-sandbox" not in log
    # HOME=/nonexistent stands in for the image's read-only home: the entrypoint moves HOME under TMPDIR.
    home = svc.state_dir.parent / "tmp" / "framestream-home"
    assert f"HOME /nonexistent is not writable (read-only root file system?): using {home}" in log, log
    assert home.is_dir() and home.stat().st_uid == unprivileged.uid

    # Every process runs as the unprivileged user; the renderers are in Chromium's sandbox: a PID namespace of
    # their own (NSpid lists two ids) and a seccomp-bpf filter (mode 2).
    assert svc.proc is not None
    for pid in {svc.proc.pid, *descendants(svc.proc.pid), *processes_using(str(svc.state_dir))}:
        status = _status(pid)
        assert not status or status["Uid"].split()[:2] == [str(unprivileged.uid)] * 2, (pid, status["Uid"])
    browsers = _chromium(svc, "browser")
    assert browsers and all(b"--no-sandbox" not in cmd for _, cmd in browsers), browsers
    renderers = _chromium(svc, "renderer")
    assert renderers, "no renderer process found"
    for pid, _ in renderers:
        status = _status(pid)
        assert status, f"renderer {pid} vanished"
        assert status["Seccomp"] == "2", (pid, status["Seccomp"])
        assert len(status["NSpid"].split()) >= 2, (pid, status["NSpid"])

    # The image's HEALTHCHECK command, run against this service, passes; against a closed port it fails.
    health = next(ins for ins in dockerfile() if ins.keyword == "HEALTHCHECK").exec_form()
    argv = [unprivileged.python, *health[1:]]
    env = unprivileged.env(FRAMESTREAM_PORT=str(svc.port))
    assert subprocess.run(argv, check=False, env=env, capture_output=True, timeout=10).returncode == 0
    env["FRAMESTREAM_PORT"] = str(free_port())
    assert subprocess.run(argv, check=False, env=env, capture_output=True, timeout=10).returncode != 0

    # SIGTERM (what tini forwards) stops the service cleanly, browsers included, and the registry is saved.
    assert svc.stop() == 0, svc.log()
    deadline = time.monotonic() + 10
    while processes_using(str(svc.state_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_using(str(svc.state_dir))
    assert frame_id in (svc.state_dir / "frames.json").read_text()
    assert all(path.stat().st_uid == unprivileged.uid for path in svc.state_dir.rglob("*") if not path.is_symlink())


def test_without_user_namespaces_the_entrypoint_refuses_and_says_how_to_fix_it(
        unprivileged: Unprivileged, no_userns: list[str]) -> None:
    state = unprivileged.own_dir("refused")
    done = unprivileged.run([*no_userns, str(ENTRYPOINT)], unprivileged.env(FRAMESTREAM_STATE_DIR=str(state)))
    assert done.returncode == 1, done
    assert "ERROR: Chromium sandbox: unavailable" in done.stderr
    assert "FRAMESTREAM_CHROME_SANDBOX=off" in done.stderr and "sandbox-image/README.md" in done.stderr
    assert "listening" not in done.stderr + done.stdout


def test_without_user_namespaces_off_runs_unsandboxed_and_says_so(
        unprivileged: Unprivileged, no_userns: list[str], services: list[EntrypointService], pages: str) -> None:
    svc = EntrypointService(unprivileged, "unsandboxed", env={"FRAMESTREAM_CHROME_SANDBOX": "off"}, wrap=no_userns)
    services.append(svc)
    svc.start()
    assert svc.proc is not None and svc.proc.poll() is None, svc.log()
    _live_box(svc, pages)
    log = svc.log()
    assert "framestream-entrypoint: WARNING: Chromium sandbox: OFF (FRAMESTREAM_CHROME_SANDBOX=off)" in log, log
    assert re.search(r"WARNING framestream\.browser\.chrome: Chromium sandbox: OFF \(FRAMESTREAM_CHROME_SANDBOX=off\)",
                     log), log
    browsers = _chromium(svc, "browser")
    assert browsers and all(b"--no-sandbox" in cmd for _, cmd in browsers), browsers


def test_without_user_namespaces_framestream_itself_reports_the_missing_sandbox(
        unprivileged: Unprivileged, no_userns: list[str], services: list[EntrypointService], pages: str) -> None:
    # Started without the entrypoint's check, Chromium cannot start; the frame's error says why and what to do.
    svc = EntrypointService(unprivileged, "direct", wrap=no_userns, argv=["framestream", "serve", "--host",
                                                                         "127.0.0.1"])
    svc.port = free_port()
    svc.argv += ["--port", str(svc.port)]
    services.append(svc)
    svc.start()
    assert svc.proc is not None and svc.proc.poll() is None, svc.log()
    status, body = svc.request("POST", "/frames", {"url": f"{pages}/box.html", "width": 400, "height": 200})
    assert status == 201, body
    frame = svc.wait_state(str(body["id"]), "error", timeout=30)
    assert "no usable sandbox" in frame["message"] and "FRAMESTREAM_CHROME_SANDBOX=off" in frame["message"], frame
    assert "Chromium sandbox: on" in svc.log()


def test_the_entrypoint_refuses_root_unless_the_sandbox_is_explicitly_off(unprivileged: Unprivileged) -> None:
    # Root inside a user namespace of our own looks like root to the script (id -u is 0), so this runs as any user.
    as_root = ["unshare", "--user", "--map-root-user"]
    base = unprivileged.root / "as-root"  # owned by this test's own uid, which the namespace maps to root
    base.mkdir()
    env = unprivileged.env(FRAMESTREAM_STATE_DIR=str(base / "state"), HOME=str(base), TMPDIR=str(base),
                           PATH="/usr/bin:/bin")
    done = subprocess.run([*as_root, str(ENTRYPOINT)], check=False, env=env, capture_output=True, text=True, timeout=10)
    if "unshare failed" in done.stderr:
        pytest.skip(f"cannot make a user namespace here: {done.stderr.strip()}")
    assert done.returncode == 1, done
    assert "ERROR: running as root: Chromium cannot use its sandbox as root" in done.stderr
    # With `off` it goes on (and fails only later, here because PATH has no framestream).
    env["FRAMESTREAM_CHROME_SANDBOX"] = "off"
    done = subprocess.run([*as_root, str(ENTRYPOINT)], check=False, env=env, capture_output=True, text=True, timeout=10)
    assert done.returncode == 1, done
    assert "WARNING: Chromium sandbox: OFF" in done.stderr and "framestream is not on PATH" in done.stderr


@pytest.mark.parametrize("value", ["maybe", "false", "1"])
def test_the_entrypoint_refuses_an_unknown_sandbox_mode(unprivileged: Unprivileged, value: str) -> None:
    done = unprivileged.run([str(ENTRYPOINT)], unprivileged.env(FRAMESTREAM_CHROME_SANDBOX=value))
    assert done.returncode == 1, done
    assert f"FRAMESTREAM_CHROME_SANDBOX={value}: expected auto, on or off" in done.stderr


def test_the_entrypoint_and_framestream_accept_the_same_sandbox_modes() -> None:
    match = re.search(r"^\s*([a-z]+(?:\s*\|\s*[a-z]+)*)\)\s*;;", ENTRYPOINT.read_text(), re.MULTILINE)
    assert match, "no case pattern for the sandbox modes in the entrypoint"
    assert tuple(m.strip() for m in match.group(1).split("|")) == SANDBOX_MODES


def test_the_entrypoint_refuses_a_state_dir_it_cannot_write(unprivileged: Unprivileged) -> None:
    locked = unprivileged.root / "locked"
    locked.mkdir()
    os.chmod(locked, 0o555)
    env = unprivileged.env(FRAMESTREAM_STATE_DIR=str(locked), FRAMESTREAM_CHROME_SANDBOX="off")
    done = unprivileged.run([str(ENTRYPOINT)], env)
    assert done.returncode == 1, done
    assert f"the state dir {locked} is not writable by uid {unprivileged.uid}" in done.stderr
    env["FRAMESTREAM_STATE_DIR"] = str(locked / "sub")
    done = unprivileged.run([str(ENTRYPOINT)], env)
    assert done.returncode == 1 and "cannot create the state dir" in done.stderr, done
