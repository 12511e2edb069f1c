"""The peers, on a display of our own that shows the same page as the framestream frame beside it.

`PeerDisplay` starts the identical kiosk Chromium the service starts (framestream.browser: the same Xvfb
flags, the same Chromium flags, the same dpr), so the page draws the same pictures at the same cost. On it:
- ffmpeg: `ffmpeg -f x11grab -framerate 30 -video_size WxH -i :N -c:v libx264 -preset ultrafast
  -tune zerolatency -f null -`, its progress read from a pipe (frames encoded, so we know it kept up);
- Selkies 2.x in its own venv (benchmarks/.selkies-venv, `pip install selkies`), WebSocket mode, x264 on the
  CPU, damage-only (`--video-streaming-mode false`), with a minimal client that sends SETTINGS and acks
  frames every 50 ms as Selkies' own web client does (or video stops).

Every process here is started through `setpriv --pdeathsig KILL` in a session of its own and ended by its own
pid/process group, so nothing outlives the benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import websockets

from benchmarks.procstat import group_pids
from benchmarks.viewer import settle
from framestream.browser.chrome import ChromeBrowser
from framestream.browser.xvfb import XvfbDisplay
from tests.support import free_port

ROOT = Path(__file__).resolve().parent
SELKIES_VENV = ROOT / ".selkies-venv"
SELKIES_BIN = SELKIES_VENV / "bin" / "selkies"
CHROME_PATH = os.environ.get("CHROME_PATH", "/usr/bin/chromium")


class PeerDisplay:
    """One Xvfb + kiosk Chromium showing `url`, launched with the package's own classes."""

    def __init__(self, display: XvfbDisplay, browser: ChromeBrowser, profile_root: str) -> None:
        self.display = display
        self.browser = browser
        self._profile_root = profile_root

    @classmethod
    async def start(cls, url: str, css_width: int, css_height: int, dpr: int) -> PeerDisplay:
        width, height = css_width * dpr, css_height * dpr
        root = tempfile.mkdtemp(prefix="fs-bench-peer-")
        display = await XvfbDisplay.start(width, height)
        try:
            browser = await ChromeBrowser.launch(chrome_path=CHROME_PATH, display=display.name,
                                                 xauthority=display.xauthority, profile_dir=Path(root) / "profile",
                                                 width=width, height=height, dpr=dpr)
        except BaseException:
            await display.stop()
            shutil.rmtree(root, ignore_errors=True)
            raise
        peer = cls(display, browser, root)
        error = await browser.navigate(url)
        if error:
            await peer.stop()
            raise RuntimeError(f"peer Chromium could not load {url}: {error}")
        return peer

    @property
    def width(self) -> int:
        return self.display.width

    @property
    def height(self) -> int:
        return self.display.height

    def chromium_pids(self) -> list[int]:
        return group_pids(self.browser.pid)

    def xvfb_pids(self) -> list[int]:
        return [self.display.pid]

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await self.browser.close(grace=3.0)
        with contextlib.suppress(Exception):
            await self.display.stop()
        shutil.rmtree(self._profile_root, ignore_errors=True)


def _spawn(argv: list[str], *, env: dict[str, str] | None = None, stdout: Any = subprocess.DEVNULL,
           log: str | None = None) -> subprocess.Popen[bytes]:
    err: Any = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - closed right after the fork
    try:
        return subprocess.Popen(["setpriv", "--pdeathsig", "KILL", *argv], env=env, stdin=subprocess.DEVNULL,
                                stdout=stdout, stderr=err, start_new_session=True)
    finally:
        if log:
            err.close()


def _end(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGTERM the process group we started (its leader is `proc`), then SIGKILL what is left."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait()


class FFmpegPeer:
    """x11grab + libx264 ultrafast/zerolatency at 30 fps into `-f null -`; frames counted from -progress."""

    def __init__(self, display: PeerDisplay) -> None:
        self.argv = [
            "ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-nostats", "-progress", "pipe:1",
            "-f", "x11grab", "-draw_mouse", "0", "-framerate", "30",
            "-video_size", f"{display.width}x{display.height}", "-i", display.display.name,
            "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-f", "null", "-",
        ]
        self.proc: subprocess.Popen[bytes] | None = None
        self.frames = 0
        self.total_size = 0
        self._reader: threading.Thread | None = None

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def start(self) -> None:
        self.proc = _spawn(self.argv, stdout=subprocess.PIPE)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            key, _, value = line.decode(errors="replace").strip().partition("=")
            with contextlib.suppress(ValueError):
                if key == "frame":
                    self.frames = int(value)
                elif key == "total_size":
                    self.total_size = int(value)

    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc is not None and self.proc.poll() is None else []

    def stop(self) -> None:
        if self.proc is not None:
            _end(self.proc)
        if self._reader is not None:
            self._reader.join(2)


def selkies_available() -> tuple[bool, str]:
    """Install Selkies into its own venv when missing; (True, version) or (False, why not)."""
    if not SELKIES_BIN.exists():
        try:
            if not (SELKIES_VENV / "bin" / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(SELKIES_VENV)], check=True,
                               capture_output=True, timeout=120)
            subprocess.run([str(SELKIES_VENV / "bin" / "pip"), "install", "-q", "selkies"], check=True,
                           capture_output=True, timeout=600)
        except (subprocess.SubprocessError, OSError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            return False, f"pip install selkies failed: {exc} {detail.decode(errors='replace')[-300:]}".strip()
    try:
        out = subprocess.run([str(SELKIES_VENV / "bin" / "python"), "-c",
                              "import importlib.metadata as m; print(m.version('selkies'))"],
                             capture_output=True, text=True, timeout=60, check=True)
    except (subprocess.SubprocessError, OSError) as exc:
        return False, f"selkies is installed but does not import: {exc}"
    return True, out.stdout.strip()


class SelkiesPeer:
    """Selkies in WebSocket mode on the peer display, damage-only, with a minimal acking client."""

    def __init__(self, display: PeerDisplay, log_dir: Path) -> None:
        self.display = display
        self.port = free_port()
        self.log = str(log_dir / f"selkies-{self.port}.log")
        self.argv = [
            str(SELKIES_BIN), "--mode", "websockets", "--addr", "127.0.0.1", "--port", str(self.port),
            "--enable-basic-auth", "false", "--encoder", "h264enc", "--framerate", "30", "--use-cpu", "true",
            "--enable-resize", "false", "--video-streaming-mode", "false",
            "--audio-enabled", "false", "--microphone-enabled", "false", "--gamepad-enabled", "false",
            "--webcam-enabled", "false", "--enable-clipboard", "false", "--file-transfers", "",
        ]
        self.proc: subprocess.Popen[bytes] | None = None
        self.ws: Any = None
        self.frames = 0  # video messages (type 0x04) received
        self.bytes = 0
        self.last_id: int | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def command(self) -> str:
        return f"DISPLAY={self.display.display.name} " + " ".join(self.argv[:1] + self.argv[1:])

    async def start(self, timeout: float = 30.0) -> None:
        env = dict(os.environ, DISPLAY=self.display.display.name)
        self.proc = _spawn(self.argv, env=env, log=self.log)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"selkies exited with {self.proc.returncode}: {self._tail()}")
            try:
                self.ws = await websockets.connect(f"ws://127.0.0.1:{self.port}/api/websockets", max_size=None,
                                                   max_queue=None)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"selkies did not listen on {self.port}: {self._tail()}") from None
                await asyncio.sleep(0.2)
        settings = {"displayId": "primary", "manual_resolution": False,
                    "initialClientWidth": self.display.width, "initialClientHeight": self.display.height,
                    "video_streaming_mode": False, "encoder": "h264enc", "framerate": 30, "use_cpu": True}
        await self.ws.send("SETTINGS," + json.dumps(settings))
        self._tasks = [asyncio.create_task(self._reader()), asyncio.create_task(self._acker())]
        # Video starts once capture does: wait for the first picture.
        while self.frames == 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"selkies sent no video within {timeout:.0f} s: {self._tail()}")
            if self._tasks[0].done():
                raise RuntimeError(f"selkies closed the connection: {self._tail()}")
            await asyncio.sleep(0.05)

    async def _reader(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for msg in self.ws:
                if isinstance(msg, bytes) and len(msg) >= 12 and msg[0] == 0x04:
                    self.frames += 1
                    self.bytes += len(msg)
                    self.last_id = (msg[2] << 8) | msg[3]

    async def _acker(self) -> None:
        """Ack the newest frame id every 50 ms, as Selkies' web client does (without acks video stops)."""
        with contextlib.suppress(websockets.ConnectionClosed):
            while True:
                await asyncio.sleep(0.05)
                if self.last_id is not None:
                    await self.ws.send(f"CLIENT_FRAME_ACK {self.last_id} 0")

    def pids(self) -> list[int]:
        if self.proc is None or self.proc.poll() is not None:
            return []
        return group_pids(self.proc.pid)

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            return Path(self.log).read_text(errors="replace")[-800:]
        return ""

    async def stop(self) -> None:
        try:
            for task in self._tasks[1:]:
                await settle(task)
            if self.ws is not None:
                await settle(asyncio.ensure_future(self.ws.close()), cancel=False)
            for task in self._tasks[:1]:
                await settle(task)
        finally:
            if self.proc is not None:
                await asyncio.to_thread(_end, self.proc)
