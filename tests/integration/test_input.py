"""Real input end to end: the service, Xvfb, Chromium and libx264, driven over the WebSocket and HTTP.

The test page tests/pages/input.html (640x400 CSS at dpr 1) paints everything the tests check:
- the DOM, exactly: a strip of 8x8 cells at the bottom, each one integer as its rgb colour, read from the
  lossless PNG of `GET /frames/{id}/screenshot` (counters, the last keydowns' keyCode/modifiers/key/code, the
  text field's value code point by code point, selection, focus, scrollTop, where the last mouseup was);
- the decoded H.264 pictures: big coloured areas (the button, the double-click target, the key lamp, a bar
  whose colour is a hash of the field's value, the scroll area, the touch area, the drag area), compared
  within a tolerance.
Each test gets a fresh frame of the page; the service is shared by the module.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import av
import numpy as np
import pytest
import websockets

from framestream.core.wire import FLAG_KEYFRAME, unpack_video_header
from tests.fixtures import service_fixture
from tests.support import FramePool, Service

pytestmark = pytest.mark.integration

W, H = 640, 400

# -- the page's colours and places (CSS pixels = picture pixels at dpr 1) --------------------------------------

BTN = (100, 60)
DBL = (260, 60)
KEYLAMP = (400, 60)
SCROLLER = (550, 70)
FIELD = (170, 150)
TOUCH = (400, 150)
AFTER = (550, 160)
BAR = (170, 205)
DRAG = (320, 285)
BLANK = (330, 110)  # white, nothing listens there

RED = (220, 30, 30)
GREEN = (30, 180, 60)
GREY = (128, 128, 128)
BLUE = (40, 60, 220)
YELLOW = (240, 200, 0)
TEAL = (20, 150, 150)
ORANGE = (240, 140, 20)
DRAG_IDLE = (210, 210, 210)
SCROLL_BLOCKS = [(200, 60, 60), (60, 200, 60), (60, 60, 200), (200, 200, 60), (200, 60, 200)]
KEY_COLOURS = {"Enter": (230, 200, 30), "Backspace": (200, 40, 200), "ArrowLeft": (30, 200, 200),
               "ArrowRight": (240, 140, 20), "ArrowUp": (20, 120, 60), "CtrlA": (120, 40, 200),
               "shifted": (20, 20, 120), "plain": (60, 60, 60)}
VIDEO_TOL = 24  # per channel, after H.264

# -- the state strip (same layout as the page's script) ---------------------------------------------------------

MAGIC = 0x5A3C96
FIELDS = ["clicks", "dblclicks", "mousedowns", "mouseups", "upX", "upY", "dragging", "dragMoves",
          "keydowns", "keyups", "shiftHeld", "shiftUps", "scrollTop", "touchstarts", "touchends", "touchX", "touchY",
          "selStart", "selEnd", "focus", "wheels"]
KEYLOG_N = 16
STRIP_TOP = 352
FOCUS = {"body": 0, "btn": 1, "field": 2, "after": 3}


def hash24(text: str) -> int:
    """FNV-1a over UTF-16 code units, low 24 bits (as the page computes it)."""
    h = 0x811C9DC5
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h ^= units[i] | units[i + 1] << 8
        h = (h * 16777619) & 0xFFFFFFFF
    return h & 0xFFFFFF


def bar_colour(text: str) -> tuple[int, int, int]:
    h = hash24(text)
    return 40 + 60 * (h & 3), 40 + 60 * ((h >> 2) & 3), 40 + 60 * ((h >> 4) & 3)


@dataclass(frozen=True)
class PageState:
    values: dict[str, int]
    keylog: list[tuple[int, int, int, int]]  # (keyCode, modifiers, hash24(key), hash24(code)), oldest first
    text: str
    capture_us: int  # the screenshot's capture time
    picture: np.ndarray = field(repr=False)

    def __getitem__(self, name: str) -> int:
        return self.values[name]


def cell(picture: np.ndarray, index: int) -> int:
    y = STRIP_TOP + (index // 80) * 8 + 4
    x = (index % 80) * 8 + 4
    r, g, b = (int(v) for v in picture[y, x, :3])
    return r << 16 | g << 8 | b


def read_state(picture: np.ndarray, capture_us: int = 0) -> PageState | None:
    if cell(picture, 0) != MAGIC:
        return None
    i = 1
    values = {}
    for name in FIELDS:
        values[name] = cell(picture, i)
        i += 1
    count = cell(picture, i)
    i += 1
    records = []
    for _ in range(KEYLOG_N):
        c0, c1, c2, c3 = (cell(picture, i + k) for k in range(4))
        records.append((c0, c1, c2, c3))
        i += 4
    length = cell(picture, i)
    text = "".join(chr(cell(picture, i + 1 + k)) for k in range(length))
    return PageState(values, records[:count], text, capture_us, picture)


def key_record(key: str, code: str, key_code: int, mods: int = 0) -> tuple[int, int, int, int]:
    return key_code, mods, hash24(key), hash24(code)


def png_rgb(png: bytes) -> np.ndarray:
    with av.open(io.BytesIO(png), mode="r") as container:
        frame = next(container.decode(video=0))
        return np.asarray(frame.to_ndarray(format="rgb24"))


def near(pixel: np.ndarray, rgb: Sequence[int], tol: int = VIDEO_TOL) -> bool:
    return bool(np.all(np.abs(pixel.astype(int)[:3] - np.array(rgb)) <= tol))


def at(picture: np.ndarray, point: tuple[int, int]) -> np.ndarray:
    return np.asarray(picture[point[1], point[0]])


# -- the service's side: screenshots ---------------------------------------------------------------------------


def screenshot(svc: Service, frame: str, token: str | None = None) -> tuple[np.ndarray, int]:
    """The frame's screenshot as RGB and its capture time (X-Capture-Time-Us)."""
    token = token or svc.token("view")
    SENT_TOKENS.add(token)
    req = urllib.request.Request(f"{svc.base}/frames/{frame}/screenshot", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"] == "image/png", resp.headers
        png = resp.read()
        capture_us = int(resp.headers["X-Capture-Time-Us"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:16]
    picture = png_rgb(png)
    assert picture.shape == (H, W, 3), picture.shape
    return picture, capture_us


async def page_state(svc: Service, frame: str, until: Callable[[PageState], bool], timeout: float = 15.0,
                     what: str = "") -> PageState:
    """Poll screenshots until the page's painted state satisfies `until` (a generous wait), and return it."""
    deadline = time.monotonic() + timeout
    last: PageState | None = None
    while True:
        picture, capture_us = await asyncio.to_thread(screenshot, svc, frame)
        state = read_state(picture, capture_us)
        if state is not None:
            last = state
            if until(state):
                return state
        if time.monotonic() > deadline:
            raise AssertionError(f"page never showed {what or 'the expected state'}; last: {last}")
        await asyncio.sleep(0.05)


# -- the viewer's side: one WebSocket, video decoded as it arrives ----------------------------------------------

SENT_TOKENS: set[str] = set()  # every token the tests sent, to check none reaches the service log


@dataclass
class Conn:
    ws: websockets.ClientConnection
    texts: list[dict[str, Any]] = field(default_factory=list)  # not yet taken by `expect`
    seen: list[dict[str, Any]] = field(default_factory=list)  # every text message, in order
    picture: np.ndarray | None = None
    picture_us: int = 0
    capture_times: list[int] = field(default_factory=list)
    seq: int = 0
    _decoder: Any = None
    _next_sequence: int | None = None

    opened: ClassVar[list[Conn]] = []  # closed after each test by `close_conns`, even when it failed

    @classmethod
    async def open(cls, svc: Service, token: str) -> Conn:
        ws = await websockets.connect(svc.ws_url, max_size=None)
        conn = cls(ws)
        cls.opened.append(conn)
        await conn.send({"type": "hello", "token": token})
        welcome = await conn.expect(lambda m: True, timeout=10)
        assert welcome["type"] == "welcome", welcome
        return conn

    async def send(self, message: dict[str, Any]) -> None:
        for name in ("token", "grant"):
            if name in message:
                SENT_TOKENS.add(message[name])
        await self.ws.send(json.dumps(message))

    async def _pump(self, timeout: float) -> None:
        try:
            raw = await asyncio.wait_for(self.ws.recv(), timeout)
        except TimeoutError:
            return
        if isinstance(raw, str):
            msg = json.loads(raw)
            self.texts.append(msg)
            self.seen.append(msg)
            return
        header = unpack_video_header(raw)
        keyframe = bool(header.flags & FLAG_KEYFRAME)
        if self._next_sequence is not None and header.sequence != self._next_sequence and not keyframe:
            self._decoder = None  # a gap: the server resumes us at a keyframe
        self._next_sequence = (header.sequence + 1) & 0xFFFFFFFF
        self.capture_times.append(header.capture_us)
        if keyframe:
            self._decoder = av.CodecContext.create("h264", "r")
        if self._decoder is None:
            return
        frames = self._decoder.decode(av.Packet(raw[16:]))
        if frames:
            self.picture = np.asarray(frames[-1].to_ndarray(format="rgb24"))
            self.picture_us = header.capture_us

    async def expect(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 15.0) -> dict[str, Any]:
        """The first text message (not yet taken) that satisfies `pred`, waiting for it if need be."""
        deadline = time.monotonic() + timeout
        while True:
            for i, msg in enumerate(self.texts):
                if pred(msg):
                    return self.texts.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no matching message within {timeout} s; last ones: {self.seen[-8:]}")
            await self._pump(left)

    async def sees(self, pred: Callable[[np.ndarray], bool], timeout: float = 15.0, what: str = "",
                   after_us: int = 0) -> np.ndarray:
        """Wait until the newest decoded picture, captured at `after_us` or later, satisfies `pred`; return it."""
        deadline = time.monotonic() + timeout
        while True:
            if self.picture is not None and self.picture_us >= after_us and pred(self.picture):
                return self.picture
            left = deadline - time.monotonic()
            if left <= 0:
                last = None if self.picture is None else self.picture[::40, ::40].tolist()
                raise AssertionError(f"the decoded picture never showed {what}; last picture (every 40th px): {last}")
            await self._pump(left)

    async def sees_colour(self, point: tuple[int, int], rgb: Sequence[int], timeout: float = 15.0,
                          after_us: int = 0) -> np.ndarray:
        """Wait for `rgb` at `point` in a decoded picture captured at `after_us` or later (e.g. a screenshot's)."""
        picture = await self.sees(lambda p: near(at(p, point), rgb), timeout, f"{rgb} at {point}", after_us)
        return at(picture, point)

    async def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            await self._pump(left)

    async def watch(self, frame: str) -> dict[str, Any]:
        await self.send({"type": "watch", "frame": frame})
        return await self.expect(lambda m: m.get("type") == "video-config", timeout=30)

    async def send_input(self, frame: str, grant: str, events: list[dict[str, Any]]) -> int:
        self.seq += 1
        await self.send({"type": "input", "frame": frame, "grant": grant, "seq": self.seq, "events": events})
        return self.seq

    async def reply(self, seq: int, timeout: float = 15.0) -> dict[str, Any]:
        return await self.expect(lambda m: m.get("seq") == seq and m.get("type") in ("input-ack", "error"), timeout)

    async def step(self, frame: str, grant: str, events: list[dict[str, Any]]) -> dict[str, Any]:
        """Send one input message and wait for its answer (input-ack or error)."""
        return await self.reply(await self.send_input(frame, grant, events))

    async def close(self) -> None:
        await self.ws.close()


def ack(reply: dict[str, Any], frame: str) -> None:
    assert reply["type"] == "input-ack" and reply["frame"] == frame, reply


def refused(reply: dict[str, Any], code: str, seq: int, frame: str) -> None:
    assert reply["type"] == "error", reply
    assert (reply["code"], reply["seq"], reply["frame"]) == (code, seq, frame), reply
    assert reply["message"], reply


# -- events -----------------------------------------------------------------------------------------------------


def move(x: float, y: float, buttons: int = 0) -> dict[str, Any]:
    return {"kind": "mouse", "action": "move", "x": x, "y": y, "button": "none", "buttons": buttons, "clicks": 0,
            "modifiers": 0}


def press(x: float, y: float, clicks: int = 1, modifiers: int = 0) -> dict[str, Any]:
    return {"kind": "mouse", "action": "down", "x": x, "y": y, "button": "left", "buttons": 1, "clicks": clicks,
            "modifiers": modifiers}


def release(x: float, y: float, clicks: int = 1, modifiers: int = 0) -> dict[str, Any]:
    return {"kind": "mouse", "action": "up", "x": x, "y": y, "button": "left", "buttons": 0, "clicks": clicks,
            "modifiers": modifiers}


def click(point: tuple[int, int]) -> list[dict[str, Any]]:
    x, y = point
    return [move(x, y), press(x, y), release(x, y)]


def key(action: str, key_: str, code: str, modifiers: int = 0) -> dict[str, Any]:
    return {"kind": "key", "action": action, "key": key_, "code": code, "modifiers": modifiers}


def tap_key(key_: str, code: str, modifiers: int = 0) -> list[dict[str, Any]]:
    return [key("down", key_, code, modifiers), key("up", key_, code, modifiers)]


# The test's own US layout (independent of framestream.core.keys): character -> (code, shift).
_US_SHIFTED = {"!": "Digit1", "@": "Digit2", "?": "Slash", ":": "Semicolon"}
_US_PLAIN = {",": "Comma", " ": "Space", ".": "Period", "-": "Minus"}


def us_key(char: str) -> tuple[str, bool]:
    if char.isascii() and char.isalpha():
        return f"Key{char.upper()}", char.isupper()
    if char.isdigit():
        return f"Digit{char}", False
    if char in _US_SHIFTED:
        return _US_SHIFTED[char], True
    return _US_PLAIN[char], False


def type_keys(text: str) -> list[dict[str, Any]]:
    """Key events as a browser reports them on a US keyboard, Shift pressed around shifted characters."""
    events: list[dict[str, Any]] = []
    for char in text:
        code, shifted = us_key(char)
        if shifted:
            events.append(key("down", "Shift", "ShiftLeft", 8))
            events += tap_key(char, code, 8)
            events.append(key("up", "Shift", "ShiftLeft", 0))
        else:
            events += tap_key(char, code)
    return events


# -- fixtures -----------------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
async def close_conns() -> AsyncIterator[None]:
    yield
    while Conn.opened:
        await Conn.opened.pop().close()


service = service_fixture(env={"FRAME_IDLE_PAUSE_S": "600"}, scope="module", timeout=30)


@pytest.fixture(scope="module")
def frames(service: Service, pages: str) -> Iterator[FramePool]:
    pool = FramePool(service, f"{pages}/input.html", W, H)
    yield pool
    pool.delete(pool.spare)


@pytest.fixture
def frame(frames: FramePool) -> Iterator[str]:
    frame_id = frames.take()
    yield frame_id
    frames.delete(frame_id)


async def viewer(svc: Service, frame: str, token: str) -> Conn:
    """A connection that watches `frame` and has seen its first picture: the page in its initial state."""
    conn = await Conn.open(svc, token)
    config = await conn.watch(frame)
    assert (config["width"], config["height"], config["css_width"], config["css_height"]) == (W, H, W, H), config
    await conn.sees_colour(BTN, RED, timeout=30)
    return conn


# -- the cases -------------------------------------------------------------------------------------------------


async def test_click_and_double_click(service: Service, frame: str) -> None:
    grant = service.token("drive", frame=frame, subject="alice")
    conn = await viewer(service, frame, grant)
    before = await page_state(service, frame, lambda s: True)
    assert (before["clicks"], before["mousedowns"], before["dblclicks"]) == (0, 0, 0)

    ack(await conn.step(frame, grant, click(BTN)), frame)
    # (A screenshot may hold part of one browser paint, as its damage arrives: wait for the button too.)
    state = await page_state(service, frame, lambda s: s["clicks"] >= 1 and tuple(at(s.picture, BTN)) != RED,
                             what="the click")
    assert (state["clicks"], state["mousedowns"], state["mouseups"]) == (1, 1, 1)
    assert (state["upX"], state["upY"], state["focus"]) == (*BTN, FOCUS["btn"])
    assert tuple(at(state.picture, BTN)) == GREEN  # exact in the PNG
    seen = await conn.sees_colour(BTN, GREEN, after_us=state.capture_us)
    assert near(at(conn.picture, DBL), GREY)  # type: ignore[arg-type]
    print(f"click: button in the decoded picture {seen.tolist()}")

    x, y = DBL
    double = [move(x, y), press(x, y, 1), release(x, y, 1), press(x, y, 2), release(x, y, 2)]
    ack(await conn.step(frame, grant, double), frame)
    state = await page_state(service, frame, lambda s: s["dblclicks"] >= 1, what="the double click")
    assert (state["dblclicks"], state["mousedowns"], state["mouseups"], state["clicks"]) == (1, 3, 3, 1)
    seen = await conn.sees_colour(DBL, BLUE, after_us=state.capture_us)
    assert near(at(conn.picture, BTN), GREEN)  # type: ignore[arg-type]
    print(f"double click: target in the decoded picture {seen.tolist()}")
    await conn.close()


async def test_keys_text_and_shortcuts(service: Service, frame: str) -> None:
    grant = service.token("drive", frame=frame, subject="alice")
    conn = await viewer(service, frame, grant)
    ack(await conn.step(frame, grant, click(FIELD)), frame)
    await page_state(service, frame, lambda s: s["focus"] == FOCUS["field"], what="the field focused")

    keyups = 0

    async def typed(events: list[dict[str, Any]], text: str, lamp: tuple[int, int, int] | None = None) -> PageState:
        """Apply one step of key/text events; wait until the page shows all of it; check the picture too."""
        nonlocal keyups
        ack(await conn.step(frame, grant, events), frame)
        keyups += sum(1 for e in events if e.get("action") == "up")
        state = await page_state(service, frame, lambda s: s["keyups"] == keyups and s.text == text,
                                 what=f"{text!r} after {keyups} keyups")
        # The decoded picture, captured no earlier than that screenshot, shows it too.
        await conn.sees_colour(BAR, bar_colour(text), after_us=state.capture_us)
        if lamp is not None:
            await conn.sees_colour(KEYLAMP, lamp, after_us=state.capture_us)
        return state

    # "Hello, World!" with Shift held around H, W and !.
    state = await typed(type_keys("Hello, World!"), "Hello, World!", KEY_COLOURS["shifted"])  # "!" last
    shift = key_record("Shift", "ShiftLeft", 16, 8)
    assert state.keylog == [
        shift, key_record("H", "KeyH", 72, 8), key_record("e", "KeyE", 69), key_record("l", "KeyL", 76),
        key_record("l", "KeyL", 76), key_record("o", "KeyO", 79), key_record(",", "Comma", 188),
        key_record(" ", "Space", 32), shift, key_record("W", "KeyW", 87, 8), key_record("o", "KeyO", 79),
        key_record("r", "KeyR", 82), key_record("l", "KeyL", 76), key_record("d", "KeyD", 68), shift,
        key_record("!", "Digit1", 49, 8),
    ]
    assert (state["keydowns"], state["keyups"], state["shiftUps"], state["shiftHeld"]) == (16, 16, 3, 0)

    # Enter types a newline in the textarea.
    state = await typed(tap_key("Enter", "Enter"), "Hello, World!\n", KEY_COLOURS["Enter"])
    assert state.keylog[-1] == key_record("Enter", "Enter", 13)

    # Backspace deletes the last character.
    state = await typed(type_keys("abc") + tap_key("Backspace", "Backspace"), "Hello, World!\nab",
                        KEY_COLOURS["Backspace"])
    assert state.keylog[-1] == key_record("Backspace", "Backspace", 8)

    # Arrows move the caret: two left, then "X" goes before "ab"; up to the first line, "Y" after "H";
    # right, "Z" after "He".
    arrows = tap_key("ArrowLeft", "ArrowLeft") * 2 + type_keys("X")
    state = await typed(arrows, "Hello, World!\nXab", KEY_COLOURS["shifted"])
    assert state.keylog[-4:] == [key_record("ArrowLeft", "ArrowLeft", 37)] * 2 + [shift, key_record("X", "KeyX", 88, 8)]
    state = await typed(tap_key("ArrowUp", "ArrowUp") + type_keys("Y"), "HYello, World!\nXab")
    assert state.keylog[-3:] == [key_record("ArrowUp", "ArrowUp", 38), shift, key_record("Y", "KeyY", 89, 8)]
    state = await typed(tap_key("ArrowRight", "ArrowRight") + type_keys("Z"), "HYeZllo, World!\nXab")
    assert state.keylog[-3:] == [key_record("ArrowRight", "ArrowRight", 39), shift, key_record("Z", "KeyZ", 90, 8)]
    state = await typed(tap_key("ArrowRight", "ArrowRight"), "HYeZllo, World!\nXab", KEY_COLOURS["ArrowRight"])
    assert (state["selStart"], state["selEnd"]) == (5, 5)

    # Ctrl+A selects everything (and types no "a"); typing then replaces the selection.
    text = "HYeZllo, World!\nXab"
    ctrl_a = [key("down", "Control", "ControlLeft", 2), *tap_key("a", "KeyA", 2), key("up", "Control", "ControlLeft")]
    state = await typed(ctrl_a, text, KEY_COLOURS["CtrlA"])
    assert (state["selStart"], state["selEnd"]) == (0, len(text))
    assert state.keylog[-2:] == [key_record("Control", "ControlLeft", 17, 2), key_record("a", "KeyA", 65, 2)]
    state = await typed(type_keys("new"), "new")
    assert (state["selStart"], state["selEnd"]) == (3, 3)

    # `text` inserts any Unicode at the caret, as an IME or a paste would.
    unicode_text = "héllo ✓ 日本"
    keydowns = state["keydowns"]
    state = await typed([{"kind": "text", "text": unicode_text}], "new" + unicode_text)
    assert state["keydowns"] == keydowns  # no key events for inserted text
    assert [ord(c) for c in state.text[3:]] == [0x68, 0xE9, 0x6C, 0x6C, 0x6F, 0x20, 0x2713, 0x20, 0x65E5, 0x672C]

    # Tab moves the focus on to the next button, which turns blue.
    state = await typed(tap_key("Tab", "Tab"), "new" + unicode_text)
    assert state["focus"] == FOCUS["after"]
    assert state.keylog[-1] == key_record("Tab", "Tab", 9)
    await conn.sees_colour(AFTER, BLUE, after_us=state.capture_us)
    await conn.close()


async def test_wheel_scrolls_the_scroll_area(service: Service, frame: str) -> None:
    grant = service.token("drive", frame=frame, subject="alice")
    conn = await viewer(service, frame, grant)
    assert near(at(conn.picture, SCROLLER), SCROLL_BLOCKS[0])  # type: ignore[arg-type]
    x, y = SCROLLER
    wheel = {"kind": "wheel", "x": x, "y": y, "dx": 0, "dy": 200, "modifiers": 0}
    ack(await conn.step(frame, grant, [move(x, y), wheel]), frame)
    state = await page_state(service, frame, lambda s: s["scrollTop"] >= 200, what="scrolled by 200")
    assert state["scrollTop"] == 200 and state["wheels"] == 1
    await conn.sees_colour(SCROLLER, SCROLL_BLOCKS[2], after_us=state.capture_us)
    ack(await conn.step(frame, grant, [{**wheel, "dy": -100}]), frame)
    state = await page_state(service, frame, lambda s: s["scrollTop"] <= 100, what="scrolled back by 100")
    assert state["scrollTop"] == 100 and state["wheels"] == 2
    await conn.sees_colour(SCROLLER, SCROLL_BLOCKS[1], after_us=state.capture_us)
    await conn.close()


async def test_touch_tap(service: Service, frame: str) -> None:
    grant = service.token("drive", frame=frame, subject="alice")
    conn = await viewer(service, frame, grant)
    x, y = TOUCH
    ack(await conn.step(frame, grant, [{"kind": "touch", "action": "start", "points": [{"id": 0, "x": x, "y": y}]}]),
        frame)
    state = await page_state(service, frame, lambda s: s["touchstarts"] >= 1, what="touchstart")
    assert (state["touchstarts"], state["touchends"], state["touchX"], state["touchY"]) == (1, 0, x, y)
    await conn.sees_colour(TOUCH, YELLOW, after_us=state.capture_us)
    ack(await conn.step(frame, grant, [{"kind": "touch", "action": "end", "points": [{"id": 0, "x": x, "y": y}]}]),
        frame)
    state = await page_state(service, frame, lambda s: s["touchends"] >= 1, what="touchend")
    assert (state["touchstarts"], state["touchends"]) == (1, 1)
    await conn.sees_colour(TOUCH, TEAL, after_us=state.capture_us)
    await conn.close()


async def test_coordinates_outside_the_frame_are_refused(service: Service, frame: str) -> None:
    grant = service.token("drive", frame=frame, subject="alice")
    conn = await viewer(service, frame, grant)
    outside: list[dict[str, Any]] = [
        move(W + 1, 10),
        move(-0.5, 10),
        move(10, H + 0.01),
        {"kind": "wheel", "x": 700, "y": 10, "dx": 0, "dy": 100},
        {"kind": "touch", "action": "start", "points": [{"id": 0, "x": 10, "y": -3}]},
    ]
    for event in outside:
        # A click on the button first: nothing of a refused message is applied, so it must not land.
        seq = await conn.send_input(frame, grant, [*click(BTN), event])
        refused(await conn.reply(seq), "bad-input", seq, frame)
    status, body = service.request("POST", f"/frames/{frame}/input", {"seq": 1, "events": [*click(BTN), move(9, 999)]},
                                   token=grant)
    assert (status, body["error"]) == (400, "bad-input"), body
    # The edges are inside (0 <= x <= width).
    ack(await conn.step(frame, grant, [move(W, H), move(0, 0)]), frame)
    await conn.drain(0.5)
    state = await page_state(service, frame, lambda s: True)
    assert (state["clicks"], state["mousedowns"], state["mouseups"]) == (0, 0, 0)
    assert near(at(conn.picture, BTN), RED)  # type: ignore[arg-type]
    picture, _ = screenshot(service, frame)
    assert tuple(at(picture, BTN)) == RED
    # One valid click afterwards lands exactly once.
    ack(await conn.step(frame, grant, click(BTN)), frame)
    state = await page_state(service, frame, lambda s: s["clicks"] >= 1)
    assert (state["clicks"], state["mousedowns"]) == (1, 1)
    await conn.sees_colour(BTN, GREEN)
    await conn.close()


async def test_input_is_rate_limited_per_connection(service: Service, frame: str) -> None:
    grant = service.token("drive", frame=frame, subject="alice")
    conn = await viewer(service, frame, grant)
    before = await page_state(service, frame, lambda s: True)
    shift5 = [key("down", "Shift", "ShiftLeft", 8), key("up", "Shift", "ShiftLeft")] * 5  # 10 events, 5 keydowns
    seqs = [await conn.send_input(frame, grant, shift5) for _ in range(60)]  # 600 events at once
    replies = [await conn.reply(seq, timeout=60) for seq in seqs]
    acked = [r for r in replies if r["type"] == "input-ack"]
    limited = [r for r in replies if r["type"] == "error"]
    assert {r["code"] for r in limited} == {"rate-limited"}, limited[:3]
    assert limited and acked, (len(acked), len(limited))
    assert "second" in limited[0]["message"]
    print(f"rate limit: {len(acked)} of 60 messages (10 events each) accepted, {len(limited)} refused")
    expected = before["keydowns"] + 5 * len(acked)
    state = await page_state(service, frame, lambda s: s["keydowns"] >= expected, what=f"{expected} keydowns")
    await asyncio.sleep(0.3)
    state = await page_state(service, frame, lambda s: True)
    assert state["keydowns"] == expected and state["shiftUps"] == before["shiftUps"] + 5 * len(acked)
    # Per connection: another connection of the same person is not limited.
    other = await Conn.open(service, grant)
    ack(await other.step(frame, grant, click(BTN)), frame)
    await conn.sees_colour(BTN, GREEN)
    await other.close()
    # And this one recovers once it slows down.
    await conn.drain(1.5)
    ack(await conn.step(frame, grant, click(BTN)), frame)
    await conn.sees_colour(BTN, RED)
    await conn.close()


def _clicked(n: int) -> Callable[[PageState], bool]:
    return lambda s: s["clicks"] == n


async def test_agent_over_http_and_screenshot(service: Service, frame: str) -> None:
    watcher = await viewer(service, frame, service.token("view", frame=frame, subject="watcher"))

    def post(grant: str, body: dict[str, Any]) -> tuple[int, Any]:
        SENT_TOKENS.add(grant)
        return service.request("POST", f"/frames/{frame}/input", body, token=grant)

    # Each click toggles the button. The answer says `changed` only if the change was captured within 250 ms
    # of applying; on a loaded machine that can take longer, so a click answered `changed:false` must still
    # show in the page, and the agent clicks again (up to 3 times).
    for clicks in range(1, 4):
        step = service.token("drive", frame=frame, subject="agent", ttl=30, step=True)
        sent_us = time.time_ns() // 1000
        status, body = await asyncio.to_thread(post, step, {"seq": clicks, "events": click(BTN)})
        assert status == 200, body
        assert body["seq"] == clicks and body["applied"] is True and isinstance(body["picture_us"], int), body
        colour = GREEN if clicks % 2 else RED
        await page_state(service, frame, _clicked(clicks), what=f"{clicks} clicks")
        if body["changed"]:
            break
        print(f"agent click {clicks} answered changed:false (the change came later than 250 ms)")
    else:
        raise AssertionError("three clicks that change the button were never answered changed:true")
    assert body["picture_us"] >= sent_us, (body, sent_us)
    assert body["picture_us"] <= time.time_ns() // 1000
    # A drive grant may take screenshots too; the screenshot's pixels show the change (once all of the
    # browser's paint has arrived: poll until the button has its new colour, which must be exact).
    _, capture_us = screenshot(service, frame, token=step)
    assert capture_us >= body["picture_us"]
    state = await page_state(service, frame, lambda s: near(at(s.picture, BTN), colour), what="the click")
    assert tuple(at(state.picture, BTN)) == colour and state["clicks"] == clicks
    # The watcher decodes the same change, in a picture captured at exactly `picture_us`.
    await watcher.sees_colour(BTN, colour, after_us=body["picture_us"])
    assert body["picture_us"] in watcher.capture_times, (body["picture_us"], watcher.capture_times[-5:])
    print(f"agent click: changed after {(body['picture_us'] - sent_us) / 1000:.1f} ms")

    # A move over blank page changes nothing: changed false, and the time it last looked.
    await watcher.drain(0.5)  # let the click's refinement pictures pass
    step2 = service.token("drive", frame=frame, subject="agent", ttl=30, step=True)
    sent_us = time.time_ns() // 1000
    status, body = await asyncio.to_thread(post, step2, {"seq": 10, "event": move(*BLANK)})
    assert status == 200, body
    print(f"no-op move: picture_us is {(body['picture_us'] - sent_us) / 1000:+.1f} ms from sending")
    assert body["seq"] == 10 and body["applied"] is True and body["changed"] is False, body
    # The display did not change for the whole window: the answer is as of the window's end, after the step.
    assert isinstance(body["picture_us"], int) and body["picture_us"] >= sent_us + 250_000, (body, sent_us)

    # A step grant is good for one step: the same grant again is refused, and nothing is applied.
    status, body = await asyncio.to_thread(post, step, {"seq": 11, "events": click(BTN)})
    assert (status, body["error"]) == (409, "replayed"), body
    await watcher.drain(0.5)
    state = await page_state(service, frame, lambda s: True)
    assert tuple(at(state.picture, BTN)) == colour and state["clicks"] == clicks
    assert near(at(watcher.picture, BTN), colour)  # type: ignore[arg-type]
    await watcher.close()


async def test_newer_person_grant_takes_over_mid_drag(service: Service, frame: str) -> None:
    watcher = await viewer(service, frame, service.token("view", frame=frame, subject="watcher"))
    agent = await viewer(service, frame, service.token("view", frame=frame, subject="agent"))
    person = await viewer(service, frame, service.token("drive", frame=frame, subject="alice"))
    # The agent's step grants for this task, minted before the person's grant below (so older).
    steps = [service.token("drive", frame=frame, subject="agent", ttl=30, step=True) for _ in range(3)]
    await asyncio.sleep(0.01)

    def control(conn: Conn, driver: str, you: bool) -> Any:
        return conn.expect(lambda m: m.get("type") == "control" and m.get("driver") == driver
                           and m.get("you") is you)

    assert near(at(watcher.picture, DRAG), DRAG_IDLE)  # type: ignore[arg-type]
    # Step 1: the agent holds Shift and presses the left button in the drag area.
    x0, y0 = DRAG
    ack(await agent.step(frame, steps[0], [move(x0, y0), key("down", "Shift", "ShiftLeft", 8), press(x0, y0)]), frame)
    await control(agent, "agent", True)
    await control(watcher, "agent", False)
    await control(person, "agent", False)
    state = await page_state(service, frame, lambda s: s["dragging"] == 1, what="the drag started")
    assert (state["mousedowns"], state["mouseups"], state["shiftHeld"]) == (1, 0, 1)
    await watcher.sees_colour(DRAG, ORANGE, after_us=state.capture_us)
    # Step 2, another step grant of the same agent: the drag carries on, nothing is released.
    ack(await agent.step(frame, steps[1], [move(x0 + 60, y0, buttons=1), move(x0 + 120, y0 + 10, buttons=1)]), frame)
    state = await page_state(service, frame, lambda s: s["dragMoves"] >= 1, what="drag moves")
    assert (state["dragging"], state["mouseups"], state["shiftHeld"], state["shiftUps"]) == (1, 0, 1, 0)
    info = service.get(f"/frames/{frame}")[1]
    assert info["driver"] == "agent"

    # The person's newer grant takes over with a key press (no mouse event of theirs): the agent's held button
    # comes up where its pointer was, and its Shift is released, before the person's key.
    person_grant = service.token("drive", frame=frame, subject="alice")
    ack(await person.step(frame, person_grant, tap_key("Escape", "Escape")), frame)
    await control(person, "alice", True)
    await control(watcher, "alice", False)
    await control(agent, "alice", False)
    state = await page_state(service, frame, lambda s: s["dragging"] == 0 and s["keyups"] == 2,
                             what="the drag ended, Shift and Escape up")
    assert (state["mouseups"], state["upX"], state["upY"]) == (1, x0 + 120, y0 + 10)
    assert (state["shiftHeld"], state["shiftUps"]) == (0, 1)
    assert state.keylog[-1] == key_record("Escape", "Escape", 27)
    await watcher.sees_colour(DRAG, TEAL, after_us=state.capture_us)
    assert service.get(f"/frames/{frame}")[1]["driver"] == "alice"

    # The agent's next step is refused: the person holds the frame (and its grant is older); nothing of it is applied.
    seq = await agent.send_input(frame, steps[2], click(BTN))
    refused(await agent.reply(seq), "taken-over", seq, frame)
    # Its first grant again: replayed.
    seq = await agent.send_input(frame, steps[0], click(BTN))
    refused(await agent.reply(seq), "replayed", seq, frame)
    # The person goes on driving.
    ack(await person.step(frame, person_grant, click(BTN)), frame)
    state = await page_state(service, frame, lambda s: s["clicks"] >= 1)
    assert (state["clicks"], state["mousedowns"], state["mouseups"]) == (1, 2, 2)
    await watcher.sees_colour(BTN, GREEN)
    controls = [(m["driver"], m["you"]) for m in watcher.seen if m["type"] == "control"]
    # (a watcher is told who drives when it starts watching: nobody yet)
    assert controls[:2] == [(None, False), ("agent", False)] and controls[-1] == ("alice", False), controls
    assert all(you is False for _, you in controls), controls
    for conn in (watcher, agent, person):
        await conn.close()


async def test_takeover_during_an_agent_step_still_releases_its_button(service: Service, frame: str) -> None:
    """The person's newer grant arrives while the agent's long step (a press, then many moves) is still being
    applied: the button that step holds must still come up, after it and before the person's input."""
    agent = await viewer(service, frame, service.token("view", frame=frame, subject="agent"))
    person = await viewer(service, frame, service.token("drive", frame=frame, subject="alice"))
    step = service.token("drive", frame=frame, subject="agent", ttl=30, step=True)
    x0, y0 = DRAG
    drag = [move(x0, y0), press(x0, y0)] + [move(x0 + 2 * i, y0 + i % 20, buttons=1) for i in range(1, 120)]
    last_x, last_y = drag[-1]["x"], drag[-1]["y"]
    agent_seq = await agent.send_input(frame, step, drag)  # mouse moves apply about one a frame: ~2 s
    await page_state(service, frame, lambda s: s["dragging"] == 1, what="the agent's drag started")
    person_grant = service.token("drive", frame=frame, subject="alice")
    person_seq = await person.send_input(frame, person_grant, tap_key("Escape", "Escape"))
    ack(await agent.reply(agent_seq), frame)  # admitted before the person's grant came: applied in full
    ack(await person.reply(person_seq), frame)
    state = await page_state(service, frame, lambda s: s["dragging"] == 0 and s["keydowns"] >= 1, timeout=10,
                             what="the drag ended and the person's key")
    assert (state["mousedowns"], state["mouseups"], state["dragMoves"]) == (1, 1, 119), state
    assert (state["upX"], state["upY"]) == (last_x, last_y)
    assert state.keylog == [key_record("Escape", "Escape", 27)]
    await person.sees_colour(DRAG, TEAL, after_us=state.capture_us)
    for conn in (agent, person):
        await conn.close()


async def test_agent_input_and_screenshot_resume_a_paused_frame(tmp_path: Path, pages: str) -> None:
    svc = Service(tmp_path / "state", env_extra={"FRAME_IDLE_PAUSE_S": "2"}).start(timeout=30)
    try:
        pool = FramePool(svc, f"{pages}/input.html", W, H)
        frame_id = await asyncio.to_thread(pool.take)
        pool.delete(pool.spare)
        await svc.wait_state_async(frame_id, "paused", timeout=15)  # nobody watches
        grant = svc.token("drive", frame=frame_id, subject="agent", ttl=30, step=True)
        SENT_TOKENS.add(grant)
        sent_us = time.time_ns() // 1000
        status, body = svc.request("POST", f"/frames/{frame_id}/input", {"seq": 5, "events": click(BTN)},
                                   token=grant)
        assert status == 200 and body["applied"] is True and body["changed"] is True, body
        assert body["picture_us"] >= sent_us
        assert svc.get(f"/frames/{frame_id}")[1]["state"] == "live"
        await svc.wait_state_async(frame_id, "paused", timeout=15)
        picture, capture_us = await asyncio.to_thread(screenshot, svc, frame_id)
        assert svc.get(f"/frames/{frame_id}")[1]["state"] == "live"
        state = read_state(picture)
        assert state is not None and state["clicks"] == 1  # the page kept its state while paused
        assert tuple(at(picture, BTN)) == GREEN and capture_us >= body["picture_us"]
    finally:
        svc.stop()
        svc.kill_leftovers()


def test_no_token_in_the_service_log(service: Service) -> None:
    """Runs last in this module: none of the tokens the tests sent is in the service's log."""
    assert SENT_TOKENS, "the tests above sent tokens"
    log = service.log()
    assert "frame" in log  # the log is there and has content
    leaked = [t for t in SENT_TOKENS if t in log or t.split(".")[1] in log]
    assert not leaked, f"{len(leaked)} tokens in the service log"


__all__ = ["Conn", "PageState", "bar_colour", "click", "hash24", "key", "move", "page_state", "png_rgb",
           "read_state", "screenshot", "tap_key", "type_keys"]

