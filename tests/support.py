"""Helpers for tests that run the real service: pages on 127.0.0.1, the service process, a stream client.

Only loopback addresses; every process a test starts is ended by its own pid (or process group) here.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

import av
import numpy as np
import websockets

from framestream.browser import proctable
from framestream.core.wire import VideoFlags, unpack_video_header
from framestream.tokens import mint_token

PAGES = Path(__file__).parent / "pages"
TEST_SECRET = "test-secret-0123456789-abcdefghijklmnopqrstuvwxyz"


T = TypeVar("T")


def forged(token: str) -> str:
    """`token` with its signature's first character changed: a signature that can never verify. (Changing the last
    character is not enough: a 32-byte MAC's last base64url character carries 4 bits, one time in 16 it is 'A'
    already.)"""
    payload, _, signature = token.partition(".")
    return f"{payload}.{'B' if signature[0] == 'A' else 'A'}{signature[1:]}"


def open_sockets() -> set[int]:
    """This process's file descriptors that are sockets. Not every descriptor: the runs beside the suite
    (tests/beside.py) open and close their pipes in this process meanwhile."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                found.add(int(fd))
        except OSError:  # closed meanwhile (the listing's own descriptor among them)
            continue
    return found


async def until(what: str, probe: Callable[[], Awaitable[T | None]], within: float = 90.0) -> T:
    """Poll `probe` every 0.2 s until it gives a truthy value (for what has no event to wait on: /metrics, a
    browser's getStats); fail saying `what` was awaited."""
    async def poll() -> T:
        while not (value := await probe()):  # noqa: ASYNC110 - polled on purpose: no event to wait on
            await asyncio.sleep(0.2)
        return value
    try:
        return await asyncio.wait_for(poll(), within)
    except TimeoutError:
        raise AssertionError(f"not within {within:g} s: {what}") from None


async def wait_released(service: Service, frame_id: str) -> None:
    """Until the paused frame gave back its capture, encoder and kept picture (`framestream_frame_released`)."""
    async def released() -> bool:
        status, text = await asyncio.to_thread(service.get, "/metrics", None)
        return status == 200 and f'framestream_frame_released{{frame="{frame_id}"}} 1' in text.decode()
    await until(f"frame {frame_id} released", released, within=60.0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def page_server(directory: Path = PAGES, handler: Any = None, port: int = 0) -> Iterator[str]:
    """Serve `directory` (or answer with `handler`, a request handler class) on 127.0.0.1 (at `port`, or any free
    one); yields the base URL (no trailing slash)."""
    handler = handler or functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, grandchildren...)."""
    return [info.pid for info in proctable.descendants(pid)]


def processes_using(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line mentions `marker` (e.g. a test's own state dir)."""
    return [info.pid for info in proctable.mentioning(marker.encode())]


class PortTaken(Exception):
    pass


def wait_until_gone(marker: str, timeout: float) -> list[int]:
    """Wait until no process mentions `marker`; returns those still there after `timeout`."""
    deadline = time.monotonic() + timeout
    while (left := processes_using(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@dataclass
class Service:
    """`framestream serve` as a child process of the test."""

    state_dir: Path
    env_extra: dict[str, str] = field(default_factory=dict)
    frames: list[str] = field(default_factory=list)
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    log_dir: Path | None = None  # where the service's log goes (default: the state dir)
    pages: str = ""  # base URL of the test pages its frames show (the `service` fixture sets it)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self, timeout: float = 20.0) -> Service:
        # A free port can be taken by someone else before the service binds it: then try another.
        fixed = bool(self.port)
        for _attempt in range(3):
            try:
                return self._start_once(timeout)
            except PortTaken:
                if fixed:
                    raise
                self.port = 0
        raise RuntimeError("no free port after 3 attempts")

    def _start_once(self, timeout: float) -> Service:
        self.port = self.port or free_port()
        env = dict(os.environ)
        env.update({"TERMINAL_AUTH_SECRET": TEST_SECRET, "FRAMESTREAM_STATE_DIR": str(self.state_dir),
                    "SANDBOX_ID": "test", "PYTHONFAULTHANDLER": "1"})  # a native crash leaves its stacks in the log
        env.update(self.env_extra)
        args = [sys.executable, "-m", "framestream", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        for frame in self.frames:
            args += ["--frame", frame]
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = (self.log_dir or self.state_dir) / f"service-{self.port}.log"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
        if self.wait_answering(timeout):
            return self
        if "address already in use" in self.log()[-2000:]:
            raise PortTaken(self.port)
        raise RuntimeError(f"service exited with {self.proc.returncode}:\n{self.log()}")

    def wait_answering(self, timeout: float) -> bool:
        """Until /healthz answers 200 (True) or the process exits (False); RuntimeError after `timeout`."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if self.get("/healthz", token=None)[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"service did not answer /healthz within {timeout:g} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def token(self, role: str, frame: str = "*", subject: str = "user", ttl: float | None = None,
              step: bool = False) -> str:
        return mint_token(TEST_SECRET, role=role, sandbox_id="test", frame=frame, subject=subject, ttl=ttl, step=step)

    def request(self, method: str, path: str, body: Any = None, token: str | None = "control",
                raw: bytes | None = None) -> tuple[int, Any]:
        headers = {}
        if token is not None:
            headers["Authorization"] = "Bearer " + (self.token(token) if token in ("view", "drive", "control")
                                                     else token)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                payload = resp.read()
                status = resp.status
                ctype = resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as err:
            payload, status, ctype = err.read(), err.code, err.headers.get("Content-Type", "")
        return status, (json.loads(payload) if "json" in ctype else payload)

    def get(self, path: str, token: str | None = "control") -> tuple[int, Any]:
        return self.request("GET", path, token=token)

    def create_frame(self, url: str, **size: int) -> str:
        """POST /frames with `url` and the size fields given (width, height, dpr); the new frame's id."""
        status, body = self.request("POST", "/frames", {"url": url, **size})
        assert status == 201, body
        return str(body["id"])

    def frame_ids(self) -> list[str]:
        status, body = self.get("/frames")
        assert status == 200, body
        return [f["id"] for f in body["frames"]]

    def wait_state(self, frame_id: str, state: str | tuple[str, ...], timeout: float = 30.0) -> dict[str, Any]:
        """Poll until the frame is in `state` (or one of them); blocking (an async test uses `wait_state_async`)."""
        deadline = time.monotonic() + timeout
        body: Any = None
        while time.monotonic() < deadline:
            status, body = self.get(f"/frames/{frame_id}")
            if status == 200 and body["state"] in ((state,) if isinstance(state, str) else state):
                return dict(body)
            time.sleep(0.1)
        raise AssertionError(f"frame {frame_id} never reached {state}: {body}\n{self.log()[-3000:]}")

    def wait_url(self, frame_id: str, fragment: str, timeout: float = 10.0) -> str:
        """Poll until the frame's URL contains `fragment`; blocking (an async test uses `wait_url_async`)."""
        deadline = time.monotonic() + timeout
        url = ""
        while time.monotonic() < deadline:
            url = str(self.get(f"/frames/{frame_id}")[1]["url"])
            if fragment in url:
                return url
            time.sleep(0.1)
        raise AssertionError(f"frame {frame_id} never reached a URL with {fragment!r}: {url}")

    # The waits above poll for seconds: an async test runs them in a thread, so that its connections keep
    # reading meanwhile (a blocked event loop leaves the service a viewer that looks stalled).
    async def wait_state_async(self, frame_id: str, state: str | tuple[str, ...],
                               timeout: float = 30.0) -> dict[str, Any]:
        return await asyncio.to_thread(self.wait_state, frame_id, state, timeout)

    async def wait_url_async(self, frame_id: str, fragment: str, timeout: float = 10.0) -> str:
        return await asyncio.to_thread(self.wait_url, frame_id, fragment, timeout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)

    def kill_leftovers(self) -> None:
        """End whatever still runs from this test's state dir (after a deliberate SIGKILL), by pid."""
        for pid in processes_using(str(self.state_dir)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class FramePool:
    """Fresh live frames of one page, one per test; the next one launches while the current test runs."""

    def __init__(self, svc: Service, url: str, width: int, height: int, dpr: int = 1) -> None:
        self.svc = svc
        self.url = url
        self.size = {"width": width, "height": height, "dpr": dpr}
        self.spare = svc.create_frame(url, **self.size)

    def take(self) -> str:
        """The spare, once up: live, or paused already when the test before it outlasted the pause delay (nobody
        watched it meanwhile; a watch or a step resumes it, as any paused frame)."""
        frame_id, self.spare = self.spare, self.svc.create_frame(self.url, **self.size)
        self.svc.wait_state(frame_id, ("live", "paused"))
        return frame_id

    def delete(self, frame_id: str) -> None:
        status, body = self.svc.request("DELETE", f"/frames/{frame_id}?purge=1")
        assert status == 200, body


@dataclass
class VideoMessage(VideoFlags):
    flags: int
    slot: int
    sequence: int
    capture_us: int
    payload: bytes
    received_at: float


class StreamClient:
    """A viewer speaking the protocol with `websockets`; decodes with PyAV when asked."""

    open_clients: ClassVar[list[StreamClient]] = []  # closed by the `close_stream_clients` fixture

    def __init__(self, ws: websockets.ClientConnection) -> None:
        StreamClient.open_clients.append(self)
        self.ws = ws
        self.texts: list[dict[str, Any]] = []
        self.videos: list[VideoMessage] = []
        self.decoders: dict[int, av.VideoCodecContext] = {}
        self.welcome: dict[str, Any] = {}

    @classmethod
    async def connect(cls, service: Service, token: str | None = None, *, features: list[str] | None = None,
                      **kwargs: Any) -> Self:
        """Connect and say hello (with `features` when given); `welcome` keeps the answer."""
        ws = await websockets.connect(service.ws_url, max_size=None, **kwargs)
        client = cls(ws)
        hello: dict[str, Any] = {"type": "hello", "token": token or service.token("view")}
        if features is not None:
            hello["features"] = features
        await client.send(hello)
        client.welcome = await client.next_text()
        assert client.welcome["type"] == "welcome", client.welcome
        return client

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def receive(self, timeout: float) -> Any:
        """The next message (a dict for text, what `_binary` makes of a binary one), or None after `timeout`."""
        try:
            raw = await asyncio.wait_for(self.ws.recv(), timeout)
        except TimeoutError:
            return None
        if isinstance(raw, str):
            msg: dict[str, Any] = json.loads(raw)
            self.texts.append(msg)
            return msg
        return self._binary(raw)

    def _binary(self, raw: bytes) -> Any:
        """A binary message as received (a subclass may compose it differently)."""
        h = unpack_video_header(raw)
        video = VideoMessage(h.flags, h.slot, h.sequence, h.capture_us, raw[16:], time.monotonic())
        self.videos.append(video)
        return video

    async def next_text(self, type_: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            msg = await self.receive(left)
            if isinstance(msg, dict) and (type_ is None or msg.get("type") == type_):
                return msg
        raise AssertionError(f"no {type_ or 'text'} message within {timeout} s; got {self.texts[-5:]}")

    async def next_video(self, timeout: float = 10.0) -> VideoMessage:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            msg = await self.receive(left)
            if isinstance(msg, VideoMessage):
                return msg
        raise AssertionError(f"no video within {timeout} s; texts: {self.texts[-5:]}")

    async def watch(self, frame_id: str) -> dict[str, Any]:
        await self.send({"type": "watch", "frame": frame_id})
        return await self.next_text("video-config", timeout=30.0)

    async def collect(self, seconds: float) -> list[VideoMessage]:
        start = len(self.videos)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            await self.receive(left)
        return self.videos[start:]

    def decode(self, video: VideoMessage) -> np.ndarray | None:
        """Decode in arrival order; the newest picture as RGB (height, width, 3) or None."""
        dec = self.decoders.get(video.slot)
        if dec is None:
            dec = self.decoders[video.slot] = av.CodecContext.create("h264", "r")
        frames = dec.decode(av.Packet(video.payload))
        return frames[-1].to_ndarray(format="rgb24") if frames else None

    async def latest_picture(self, timeout: float = 10.0, *, refined: bool = False, quiet: float = 0.3
                             ) -> np.ndarray:
        """The picture the page shows now (a refined one, if asked), decoded from the next keyframe on.

        A joiner first gets the frame's last keyframe and the pictures since, which may all be older than this
        call: so this returns the first picture captured after the call, or, once pictures stop coming for
        `quiet` seconds (a still page), the newest one decoded.
        """
        asked_us = time.time_ns() // 1000
        deadline = time.monotonic() + timeout
        picture = None
        seen_key = False
        while (left := deadline - time.monotonic()) > 0:
            msg = await self.receive(left if picture is None else min(quiet, left))
            if msg is None:
                if picture is not None:
                    return picture
                continue
            if not isinstance(msg, VideoMessage):
                continue
            seen_key = seen_key or msg.keyframe
            if not seen_key:
                continue
            decoded = self.decode(msg)  # every picture, so the decoder never misses a reference
            if decoded is not None and (not refined or msg.refinement):
                picture = decoded
                if msg.capture_us >= asked_us:
                    return picture
        if picture is not None:
            return picture
        raise AssertionError("no decodable picture in time")

    async def latest_picture_after_keyframe_request(self, frame_id: str, timeout: float = 10.0) -> np.ndarray:
        """The current picture, by asking for a keyframe (useful when decoding was not kept up)."""
        await self.send({"type": "keyframe", "frame": frame_id})
        return await self.latest_picture(timeout)

    async def wait_for_colour(self, frame_id: str, at: tuple[int, int], rgb: tuple[int, int, int],
                              timeout: float = 15.0) -> np.ndarray:
        """Ask for a keyframe, then decode every picture until the pixel `at` (y, x) shows `rgb`."""
        picture, _ = await self.wait_for_one_of(frame_id, at, [rgb], timeout)
        return picture

    async def wait_for_one_of(self, frame_id: str, at: tuple[int, int], colours: list[tuple[int, int, int]],
                              timeout: float = 15.0) -> tuple[np.ndarray, tuple[int, int, int]]:
        """Ask for a keyframe, then decode until the pixel `at` (y, x) shows one of `colours`: (picture, colour).

        Pictures of a page still loading (blank) are skipped, so a page's verdict is read only once it is painted.
        """
        def shown(picture: np.ndarray) -> tuple[int, int, int] | None:
            return next((rgb for rgb in colours if colour_near(picture[at], rgb)), None)

        picture = await self.wait_for_picture(frame_id, f"pixel {at} showing any of {colours}",
                                              lambda p: shown(p) is not None, at, timeout)
        colour = shown(picture)
        assert colour is not None
        return picture, colour

    async def wait_for_picture(self, frame_id: str, what: str, test: Callable[[np.ndarray], bool],
                               at: tuple[int, int], timeout: float = 15.0) -> np.ndarray:
        """Ask for a keyframe, then decode every picture until one passes `test`; fails saying `what` was awaited
        and the last picture's pixel `at` (y, x)."""
        await self.send({"type": "keyframe", "frame": frame_id})
        deadline = time.monotonic() + timeout
        seen_key = False
        last = None
        while (left := deadline - time.monotonic()) > 0:
            msg = await self.receive(left)
            if not isinstance(msg, VideoMessage):
                continue
            seen_key = seen_key or msg.keyframe
            if not seen_key:
                continue
            picture = self.decode(msg)
            if picture is not None:
                last = picture
                if test(picture):
                    return picture
        raise AssertionError(f"never saw {what}; the last picture's pixel {at}: {None if last is None else last[at]}")

    async def close(self) -> None:
        """The closing handshake, reading what the service still sends meanwhile: its close frame queues behind
        pictures this client did not read, and websockets stops reading past `max_queue`, so a bare close waited
        out its 10 s `close_timeout` (the service had seen the close at once)."""
        async def drain() -> None:
            with contextlib.suppress(websockets.ConnectionClosed, websockets.ConcurrencyError):
                async for _ in self.ws:
                    pass

        reader = asyncio.create_task(drain())
        try:
            await self.ws.close()
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


def colour_near(pixel: np.ndarray, rgb: tuple[int, int, int], tol: int = 12) -> bool:
    return bool(np.all(np.abs(pixel.astype(int) - np.array(rgb)) <= tol))


def read_counter(picture: np.ndarray) -> int:
    """counter.html's 16 squares (CSS 20px + 4px gap from x=20, y=20; dpr 1), black = 1."""
    value = 0
    for i in range(16):
        pixel = picture[30, 20 + 24 * i + 10]
        value = (value << 1) | int(pixel.mean() < 128)
    return value


def _frame_processes(service: Service, frame_id: str) -> list[proctable.ProcessInfo]:
    """The frame's Chromium processes: those started with its profile."""
    return proctable.mentioning(str(service.state_dir / "profiles" / frame_id).encode())


def browser_pids(service: Service, frame_id: str) -> list[int]:
    """The frame's browser processes (Chromium's main process, the one without a --type): one, or none."""
    return [info.pid for info in _frame_processes(service, frame_id) if b"--type=" not in info.cmdline]


def browser_pid(service: Service, frame_id: str) -> int:
    pids = browser_pids(service, frame_id)
    assert pids, f"no browser for {frame_id}"
    return pids[0]


def display_pid(service: Service, frame_id: str) -> int:
    """The Xvfb whose display the frame's browser uses (its DISPLAY environment variable)."""
    with open(f"/proc/{browser_pid(service, frame_id)}/environ", "rb") as fh:
        env = dict(item.split(b"=", 1) for item in fh.read().split(b"\0") if b"=" in item)
    display = env[b"DISPLAY"].decode()
    for info in proctable.list_processes():
        args = info.args
        # -displayfd chose the number; match it through the X socket the server holds open.
        if args and args[0].endswith(b"Xvfb") and b"-displayfd" in args and _listens_on(info.pid, display):
            return info.pid
    raise AssertionError(f"no Xvfb for {display}")


def _listens_on(pid: int, display: str) -> bool:
    sock = f"/tmp/.X11-unix/X{display.lstrip(':')}"
    try:
        inodes = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except OSError:
        return False
    with open("/proc/net/unix") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 8 and parts[7] in (sock, "@" + sock) and f"socket:[{parts[6]}]" in inodes:
                return True
    return False


def page_renderer_pids(service: Service, frame_id: str) -> list[int]:
    """Renderers that may hold the page (not the browser's own UI renderer)."""
    pids = [info.pid for info in _frame_processes(service, frame_id)
            if b"--type=renderer" in info.cmdline and b"--top-chrome-webui" not in info.cmdline
            and b"--extension-process" not in info.cmdline]
    assert pids, f"no page renderer for {frame_id}"
    return pids
