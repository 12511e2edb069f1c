"""The state dir full or read-only: a clear error, frames keep streaming, nothing half-written, caught up later.

The state dir is a small tmpfs of its own, so "full" and "read-only" are real kernel answers (ENOSPC, EROFS)
even for root, who passes every permission check. Mounting needs root with CAP_SYS_ADMIN, as `make test` has.
The profiles get a tmpfs of their own inside it: what Chromium does with a full disk is Chromium's business, and
its own writes and deletes must not make room for (or take room from) the registry at random moments.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from framestream.client import Client, FrameView
from tests.support import Service, read_counter

pytestmark = pytest.mark.integration


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=20)


@contextlib.contextmanager
def tmpfs(path: Path, size_mb: int) -> Iterator[Path]:
    path.mkdir()
    done = _mount("-t", "tmpfs", "-o", f"size={size_mb}m,mode=0700", "framestream-test", str(path))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], capture_output=True, timeout=20)


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """`path` itself read-only (mounts inside it, the profiles, stay writable).

    A recursive bind mount of the directory onto itself, its top remounted read-only: the kernel refuses to
    remount a mount with files open for writing, and the fresh bind mount has none."""
    assert _mount("--rbind", str(path), str(path)).returncode == 0
    try:
        done = _mount("-o", "remount,bind,ro", str(path))
        assert done.returncode == 0, done.stderr
        yield
    finally:
        subprocess.run(["umount", "--recursive", str(path)], capture_output=True, timeout=20)


def fill(path: Path) -> Path:
    """Write zeros until the file system says it is full."""
    filler = path / "filler"
    chunk = b"\0" * (1 << 20)
    with open(filler, "wb", buffering=0) as fh, contextlib.suppress(OSError):
        while True:
            fh.write(chunk)
    with pytest.raises(OSError, match="No space"):
        (path / "probe").write_bytes(chunk)
    return filler


def registry_ids(state: Path) -> list[str]:
    data = json.loads((state / "frames.json").read_text())  # always whole JSON: never half-written
    return sorted(f["id"] for f in data["frames"])


async def wait_health(service: Service, has_error: bool, timeout: float = 10.0) -> dict[str, object]:
    """/healthz once it says (or no longer says) a state dir error; polled off the loop (a viewer is reading)."""
    deadline = time.monotonic() + timeout
    while True:
        body = (await asyncio.to_thread(service.get, "/healthz", None))[1]
        if ("state_dir_error" in body) == has_error or time.monotonic() > deadline:
            return dict(body)
        await asyncio.sleep(0.1)


async def counter_runs(view: FrameView) -> None:
    """The watched counter page still streams: a picture captured from now on shows a count, and a later one a
    higher count."""
    before = read_counter((await view.picture_after(time.time_ns() // 1000, timeout=15)).rgb)
    await view.picture_after(0, where=lambda p: read_counter(p.rgb) > before, timeout=15)


def metric(service: Service, name: str) -> float:
    text = service.get("/metrics", token=None)[1].decode()
    return float(next(line.split()[-1] for line in text.splitlines() if line.startswith(name + " ")))


async def test_a_full_then_read_only_state_dir_keeps_frames_streaming_and_the_registry_whole(
    tmp_path: Path, pages: str
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    with tmpfs(tmp_path / "state", 1) as state, tmpfs(state / "profiles", 512):
        service = Service(state, log_dir=logs).start()
        client: Client | None = None
        try:
            ids = [service.create_frame(f"{pages}/{page}", width=480, height=200, dpr=1)
                   for page in ("counter.html", "box.html", "box.html")]
            watched, gone_when_full, gone_when_read_only = ids
            for frame_id in ids:
                await service.wait_state_async(frame_id, "live")
            client = await Client.connect(service.base, token=service.token("view"), reconnect=False)
            view = await client.watch(watched)
            await counter_runs(view)
            assert await wait_health(service, has_error=False) == {"ok": True}

            # Full: deleting a frame cannot be saved. The old registry stays whole, no temp file is left.
            filler = fill(state)
            assert service.request("DELETE", f"/frames/{gone_when_full}")[0] == 200
            health = await wait_health(service, has_error=True)
            assert "No space left" in str(health.get("state_dir_error")), health
            assert registry_ids(state) == sorted(ids)
            assert not list(state.glob("*.tmp")), "a half-written temporary file was left"
            assert metric(service, "framestream_state_writable") == 0
            assert metric(service, "framestream_state_write_errors_total") >= 1
            await counter_runs(view)
            assert "cannot save the frame registry" in service.log()
            assert service.log().count("cannot save the frame registry") == 1, "one error per outage, not a flood"

            # Space back: the registry catches up by itself.
            filler.unlink()
            assert await wait_health(service, has_error=False) == {"ok": True}
            assert registry_ids(state) == sorted([watched, gone_when_read_only])

            # Read-only: the same story with EROFS.
            with read_only(state):
                assert service.request("DELETE", f"/frames/{gone_when_read_only}")[0] == 200
                health = await wait_health(service, has_error=True)
                assert "Read-only" in str(health.get("state_dir_error")), health
                assert registry_ids(state) == sorted([watched, gone_when_read_only])
                await counter_runs(view)
            assert await wait_health(service, has_error=False) == {"ok": True}
            assert registry_ids(state) == [watched]
            assert service.get(f"/frames/{watched}")[1]["state"] == "live"
        finally:
            if client is not None:
                await client.close()
            service.stop()
            service.kill_leftovers()
