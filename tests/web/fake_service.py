"""A small stand-in for the framestream service, for viewer tests that need to steer the server's side.

It speaks the viewer's half of the protocol (docs/protocol.md): hello/welcome, watch -> frame-state +
video-config + a keyframe, keyframe requests, input -> input-ack, control, errors; binary video with the
16-byte header and real H.264 (PyAV libx264, Annex B, SPS/PPS before every IDR). The test drives it directly:
push a picture, skip sequence numbers, change a frame's state, drop every connection. No browser, no Xvfb: the
pictures are drawn with numpy. The real service is tested by test_viewer_browser.py.
"""

from __future__ import annotations

import base64
import contextlib
import fractions
import json
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import numpy as np
from aiohttp import WSMsgType, web

WEB_DIR = Path(__file__).resolve().parents[2] / "web"
BACKGROUND = (255, 255, 255)


def claims_of(token: str) -> dict[str, Any] | None:
    try:
        part = token.split(".", maxsplit=1)[0]
        claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, IndexError):
        return None
    return claims if isinstance(claims, dict) else None


def fake_token(role: str, sub: str = "tester", iat: float | None = None) -> str:
    """A token in the real format; the fake does not check the MAC."""
    now = time.time() if iat is None else iat
    claims = {"v": 1, "sbx": "local", "frm": "*", "role": role, "sub": sub, "iat": now, "exp": now + 600,
              "jti": f"{role}-{sub}-{now}"}
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{body}.{base64.urlsafe_b64encode(b'unsigned').rstrip(b'=').decode()}"


class Encoder:
    def __init__(self, width: int, height: int) -> None:
        self.cc = av.CodecContext.create("libx264", "w")
        self.cc.width, self.cc.height, self.cc.pix_fmt = width, height, "yuv420p"
        self.cc.time_base = fractions.Fraction(1, 1_000_000)
        self.cc.options = {
            "preset": "ultrafast",
            "tune": "zerolatency",
            "profile": "baseline",
            "x264-params": "repeat-headers=1:forced-idr=1:keyint=1000000:scenecut=0",
        }
        self.pts = 0
        self.codec: str | None = None

    def encode(self, rgb: np.ndarray, key: bool) -> bytes:
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
        self.pts += 1
        frame.pts = self.pts
        if key:
            frame.pict_type = av.video.frame.PictureType.I
        data = b"".join(bytes(p) for p in self.cc.encode(frame))
        if self.codec is None:
            sps = data.find(b"\x00\x00\x01\x67")
            self.codec = "avc1." + data[sps + 4 : sps + 7].hex().upper()
        return data


@dataclass
class FakeFrame:
    id: str
    css_width: int = 320
    css_height: int = 200
    dpr: int = 2
    url: str = "http://fake.test/page.html"
    state: str = "live"
    box: tuple[int, int, int, int] = (40, 40, 120, 80)  # CSS x, y, w, h
    color: tuple[int, int, int] = (30, 90, 220)
    sequence: int = 0
    driver: str | None = None
    driver_iat: float = 0.0
    encoder: Encoder | None = None

    @property
    def width(self) -> int:
        return self.css_width * self.dpr

    @property
    def height(self) -> int:
        return self.css_height * self.dpr

    def render(self) -> np.ndarray:
        img = np.empty((self.height, self.width, 3), np.uint8)
        img[:] = BACKGROUND
        x, y, w, h = (v * self.dpr for v in self.box)
        img[y : y + h, x : x + w] = self.color
        return img

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "url": self.url, "state": self.state, "width": self.css_width,
                "height": self.css_height, "dpr": self.dpr, "viewers": 0, "driver": self.driver}


@dataclass
class Conn:
    ws: web.WebSocketResponse
    token: str
    claims: dict[str, Any]
    slots: dict[str, int] = field(default_factory=dict)


class FakeService:
    def __init__(self, frames: list[FakeFrame], shared_frames: bool = True) -> None:
        self.frames = {f.id: f for f in frames}
        self.shared_frames = shared_frames
        self.conns: list[Conn] = []
        self.keyframe_requests: list[str] = []
        self.inputs: list[dict[str, Any]] = []
        self.hellos = 0
        self.watches: list[str] = []
        self.runner: web.AppRunner | None = None
        self.port = 0
        # behaviour switches for tests
        self.ignore_keyframe_requests = False

    # --- lifecycle ---
    async def start(self) -> str:
        app = web.Application()
        app.router.add_get("/", self._index)
        app.router.add_get("/ws", self._ws)
        app.router.add_get("/config", self._config)
        app.router.add_get("/frames", self._frames)
        app.router.add_static("/web/", WEB_DIR)
        self.runner = web.AppRunner(app, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        for c in list(self.conns):
            with contextlib.suppress(Exception):
                await c.ws.close(code=1001)
        if self.runner:
            await self.runner.cleanup()

    # --- HTTP ---
    async def _index(self, _: web.Request) -> web.StreamResponse:
        return web.FileResponse(WEB_DIR / "index.html")

    async def _config(self, _: web.Request) -> web.Response:
        return web.json_response({"protocol": 1, "shared_frames": self.shared_frames, "max_browsers": 6})

    async def _frames(self, req: web.Request) -> web.Response:
        auth = req.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or claims_of(auth[7:]) is None:
            return web.json_response({"error": "unauthorized", "message": "no token"}, status=401)
        return web.json_response({"frames": [f.describe() for f in self.frames.values()]})

    # --- WebSocket ---
    async def _ws(self, req: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(req)
        first = await ws.receive(timeout=5)
        msg = json.loads(first.data) if first.type == WSMsgType.TEXT else {}
        claims = claims_of(msg.get("token", "")) if msg.get("type") == "hello" else None
        if claims is None:
            await ws.close(code=4401, message=b"bad token")
            return ws
        self.hellos += 1
        conn = Conn(ws, msg["token"], claims)
        self.conns.append(conn)
        await ws.send_json({"type": "welcome", "protocol": 1, "sandbox": "local",
                            "shared_frames": self.shared_frames})
        try:
            async for m in ws:
                if m.type != WSMsgType.TEXT:
                    continue
                await self._on_message(conn, json.loads(m.data))
        finally:
            self.conns.remove(conn)
        return ws

    async def _on_message(self, conn: Conn, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        frame = self.frames.get(msg.get("frame", ""))
        if kind in ("watch", "keyframe", "input", "unwatch") and frame is None:
            err = {"type": "error", "code": "unknown-frame", "message": "no such frame",
                   "frame": msg.get("frame")}
            if "seq" in msg:
                err["seq"] = msg["seq"]
            await conn.ws.send_json(err)
            return
        assert frame is not None or kind not in ("watch", "keyframe", "input", "unwatch")
        if kind == "watch" and frame is not None:
            self.watches.append(frame.id)
            # not 0 and not 1: slots are the server's to pick, the viewer must not assume any
            slot = conn.slots.setdefault(frame.id, len(conn.slots) + 7)
            await conn.ws.send_json(self._state_msg(frame))
            await conn.ws.send_json({"type": "video-config", "frame": frame.id, "slot": slot,
                                     "codec": self._codec(frame), "width": frame.width,
                                     "height": frame.height, "css_width": frame.css_width,
                                     "css_height": frame.css_height})
            if frame.state == "live":
                await self.push(frame.id, key=True, only=conn)
        elif kind == "unwatch" and frame is not None:
            conn.slots.pop(frame.id, None)
        elif kind == "keyframe" and frame is not None:
            self.keyframe_requests.append(frame.id)
            if not self.ignore_keyframe_requests:
                await self.push(frame.id, key=True)
        elif kind == "input" and frame is not None:
            await self._input(conn, frame, msg)

    async def _input(self, conn: Conn, frame: FakeFrame, msg: dict[str, Any]) -> None:
        grant = claims_of(msg.get("grant", "")) or {}
        seq = msg.get("seq")
        if grant.get("role") != "drive":
            await conn.ws.send_json({"type": "error", "code": "forbidden", "message": "not a drive grant",
                                     "frame": frame.id, "seq": seq})
            return
        if grant.get("iat", 0) < frame.driver_iat:
            await conn.ws.send_json({"type": "error", "code": "superseded", "message": "newer grant drives",
                                     "frame": frame.id, "seq": seq})
            return
        if frame.driver != grant.get("sub") or grant.get("iat", 0) != frame.driver_iat:
            frame.driver, frame.driver_iat = grant.get("sub"), grant.get("iat", 0)
            for c in self.conns:
                if frame.id in c.slots:
                    you = (claims_of(c.token) or {}).get("jti") == grant.get("jti")
                    await c.ws.send_json({"type": "control", "frame": frame.id, "driver": frame.driver,
                                          "you": you})
        events = msg.get("events") or [msg.get("event")]
        changed = False
        for ev in events:
            self.inputs.append(ev)
            if ev.get("kind") == "mouse" and ev.get("action") == "down":
                x, y, w, h = frame.box
                if x <= ev["x"] < x + w and y <= ev["y"] < y + h:
                    frame.color = (20, 170, 60)
                    changed = True
            if ev.get("kind") == "key" and ev.get("action") == "down" and ev.get("key") == "r":
                frame.color = (210, 30, 30)
                changed = True
        await conn.ws.send_json({"type": "input-ack", "frame": frame.id, "seq": seq})
        if changed:
            await self.push(frame.id)

    # --- what tests call ---
    def _codec(self, frame: FakeFrame) -> str:
        if frame.encoder is None:
            frame.encoder = Encoder(frame.width, frame.height)
            # encode one throwaway keyframe to learn the codec string from the SPS
            frame.encoder.encode(frame.render(), key=True)
        assert frame.encoder.codec is not None
        return frame.encoder.codec

    def _state_msg(self, frame: FakeFrame) -> dict[str, Any]:
        viewers = sum(1 for c in self.conns if frame.id in c.slots)
        return {"type": "frame-state", "frame": frame.id, "state": frame.state, "url": frame.url,
                "viewers": viewers, "driver": frame.driver}

    async def push(self, frame_id: str, key: bool = False, skip: int = 0, only: Conn | None = None) -> int:
        """Encode the frame's current picture and send it to its watchers; `skip` loses sequence numbers
        first (as a server that skipped pictures for a viewer). Returns the picture's sequence number."""
        frame = self.frames[frame_id]
        self._codec(frame)
        assert frame.encoder is not None
        payload = frame.encoder.encode(frame.render(), key=key)
        frame.sequence = (frame.sequence + 1 + skip) & 0xFFFFFFFF
        capture_us = time.time_ns() // 1000
        for c in list(self.conns if only is None else [only]):
            slot = c.slots.get(frame_id)
            if slot is None:
                continue
            header = struct.pack(">BBHIQ", 1, 1 if key else 0, slot, frame.sequence, capture_us)
            with contextlib.suppress(ConnectionError):
                await c.ws.send_bytes(header + payload)
        return frame.sequence

    async def set_state(self, frame_id: str, state: str, message: str | None = None) -> None:
        frame = self.frames[frame_id]
        frame.state = state
        msg = self._state_msg(frame)
        if message:
            msg["message"] = message
        for c in self.conns:
            if frame_id in c.slots:
                await c.ws.send_json(msg)

    async def send_control(self, frame_id: str, driver: str, you: bool) -> None:
        for c in self.conns:
            if frame_id in c.slots:
                await c.ws.send_json({"type": "control", "frame": frame_id, "driver": driver, "you": you})

    async def drop_connections(self, code: int = 1011) -> None:
        for c in list(self.conns):
            await c.ws.close(code=code, message=b"fake drop")
