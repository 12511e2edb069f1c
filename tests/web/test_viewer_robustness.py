"""The viewer (web/) in a real headless Chromium against the real service, when things go wrong or get busy.

Everything is real: `framestream serve` (Xvfb, Chromium, libx264) streams tests/web/pages/robust.html, the
viewer page served at `/` decodes it with WebCodecs, and the tests read the canvas pixels back (colours after
H.264, tolerance 24 per channel). Frames are CSS 640x400 at dpr 1, so a CSS position is a canvas pixel.
What the page saw of the viewer's input is painted by the page as bit cells (see robust.html) and read back
from the canvas too. Situations are caused the real way: input over HTTP with another drive grant makes the
page change, `DELETE /frames` closes a frame, an unreachable URL makes an error, the idle rule pauses an
unwatched frame, the service is stopped and started again on the same port and state dir. The only help from
inside the library: `_debugDropNext` (a picture lost on the way) and `_debugCorrupt` (a broken decoder), with
`_debugTrace` to see what the viewer did with each picture.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from framestream.client import Client
from framestream.tokens import mint_token
from tests.fixtures import service_fixture
from tests.silent_path import SilentPath
from tests.support import Service
from tests.web.browser import JS_CANVAS_POINT, Page, close_to, info, open_viewer, pixel, wait_pixel
from tests.web.hidden_view import hidden_and_back
from tests.webrtc.metrics import metric

# One event loop, one viewer browser for the module (a fresh Chromium per test costs ~1.5 s each).
pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

CSS_W, CSS_H = 640, 400
RED = (200, 40, 40)
GREEN = (30, 180, 60)
BLUE = (30, 60, 200)
WHITE = (255, 255, 255)
MAGENTA = (255, 0, 255)
BOX = (120, 90)  # CSS centre of #box
DBL = (300, 90)  # of #dbl
ANIM = (500, 90)  # of #anim
FIELD = (140, 200)  # of #field
BLANK = (320, 250)  # white page background
# robust.html's registers, in its order.
REGS = ["magic", "downs", "downX", "downY", "downBits", "ups", "upX", "upY", "upBits", "dragMoves", "dragX",
        "dragY", "dragButtons", "dragMaxX", "dblclicks", "wheels", "wheelDY", "wheelDX", "wheelX", "wheelY",
        "keydowns", "keyups", "held", "downMods", "downKey", "downCode", "upMods", "upKey", "upCode",
        "textLength", "textHash", "boxClicks", "innerWidth", "innerHeight"]
MAGIC = 0xA5C35A
OFFSET = 0x800000


def hash24(text: str) -> int:
    """robust.html's hash: FNV-1a over UTF-16 code units, low 24 bits."""
    h = 0x811C9DC5
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h ^= units[i] | (units[i + 1] << 8)
        h = (h * 16777619) & 0xFFFFFFFF
    return h & 0xFFFFFF


def bits(packed: int) -> dict[str, int]:
    """A mouse register: button | buttons << 2 | detail << 8 | modifiers << 12."""
    return {"button": packed & 3, "buttons": (packed >> 2) & 31, "detail": (packed >> 8) & 15,
            "modifiers": (packed >> 12) & 15}


JS_REGS = """
(() => {{
  const c = document.querySelector('canvas[data-frame="{frame}"]');
  if (!c || c.width < {css_w}) return null;
  const s = c.width / {css_w};
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const out = [];
  for (let i = 0; i < {n}; i++) {{
    let v = 0;
    for (let b = 0; b < 24; b++) {{
      const x = Math.floor(((i % 3) * 208 + b * 8 + 4) * s);
      const y = Math.floor((296 + Math.floor(i / 3) * 8 + 4) * s);
      const k = (y * c.width + x) * 4;
      v = v * 2 + (d[k] + d[k + 1] + d[k + 2] > 384 ? 1 : 0);
    }}
    out.push(v);
  }}
  return out;
}})()
"""


# -- the service, the pages, the browser ----------------------------------------------------------------------

# A short idle pause, so that the paused state can be reached in a test (watched frames never pause).
service = service_fixture(env={"FRAME_IDLE_PAUSE_S": "1"}, scope="module", pages="web_pages", timeout=60)


@pytest.fixture
def make_frame(service: Service, web_pages: str) -> Iterator[Callable[..., str]]:
    """Make frames live (CSS 640x400, dpr 1); each is ended after the test."""
    made: list[str] = []

    def make(path: str = "robust.html", url: str | None = None) -> str:
        status, body = service.request("POST", "/frames", {"url": url or f"{web_pages}/{path}", "width": CSS_W,
                                                            "height": CSS_H, "dpr": 1})
        assert status == 201, body
        made.append(str(body["id"]))
        return str(body["id"])

    yield make
    for frame in made:
        with contextlib.suppress(OSError):
            service.request("DELETE", f"/frames/{frame}")


# -- helpers -----------------------------------------------------------------------------------------------------

async def view(page: Page, frame: str) -> dict[str, Any]:
    return await page.eval(f"fsView({json.dumps(frame)})")  # type: ignore[no-any-return]


async def regs(page: Page, frame: str) -> dict[str, int] | None:
    values = await page.eval(JS_REGS.format(frame=frame, css_w=CSS_W, n=len(REGS)))
    if not values or values[0] != MAGIC:
        return None
    return dict(zip(REGS, values, strict=True))


async def wait_regs(page: Page, frame: str, check: Callable[[dict[str, int]], bool],
                    within: float = 15) -> dict[str, int]:
    """Poll the page's registers (as decoded by the viewer) until `check` holds."""
    deadline = time.monotonic() + within
    last = None
    while time.monotonic() < deadline:
        last = await regs(page, frame)
        if last is not None and check(last):
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"registers never matched; last {last}")


async def canvas_point(page: Page, frame: str, css: tuple[float, float]) -> tuple[float, float]:
    x, y = await page.eval(JS_CANVAS_POINT.format(frame=frame, fx=css[0] / CSS_W, fy=css[1] / CSS_H))
    return x, y


async def click_css(page: Page, frame: str, css: tuple[float, float]) -> None:
    await page.click(*await canvas_point(page, frame, css))


async def post_input(service: Service, frame: str, token: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Input over HTTP (`POST /frames/{id}/input`), as another party (an agent) with its own drive grant."""
    status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame}/input",
                                           {"seq": time.monotonic_ns() // 1000, "events": events}, token)
    assert status == 200, body
    return dict(body)


def click_events(css: tuple[int, int]) -> list[dict[str, Any]]:
    x, y = css
    return [{"kind": "mouse", "action": "down", "x": x, "y": y, "button": "left", "buttons": 1, "clicks": 1,
             "modifiers": 0},
            {"kind": "mouse", "action": "up", "x": x, "y": y, "button": "left", "buttons": 0, "clicks": 1,
             "modifiers": 0}]


def live_over(record: dict[str, Any], old: tuple[int, int, int]) -> bool:
    """A `live` record as the view showed it: no overlay, or, when its first picture of the page since was not yet
    drawn, `Updating…` over the `old` one."""
    return record["overlay"] is None or (record["overlay"], close_to(record["px"], old)) == ("Updating…", True)


async def records(page: Page, frame: str) -> list[dict[str, Any]]:
    return await page.eval(f"fsRecords[{json.dumps(frame)}]")  # type: ignore[no-any-return]


async def start_trace(page: Page, frame: str, at: tuple[int, int]) -> None:
    """Record what the viewer does with each picture, and the canvas pixel at `at` when it arrives."""
    f = json.dumps(frame)
    ok = await page.eval(f"""(() => {{
      window.fsTrace = [];
      return window.framestream.client._debugTrace({f}, (e) => {{
        e.px = fsPixel({f}, {at[0]}, {at[1]});
        e.t = performance.now();
        window.fsTrace.push(e);
      }});
    }})()""")
    assert ok


async def trace(page: Page) -> list[dict[str, Any]]:
    return await page.eval("window.fsTrace")  # type: ignore[no-any-return]


# -- tests -------------------------------------------------------------------------------------------------------

async def test_a_lost_picture_is_noticed_by_its_sequence_and_deltas_wait_for_a_keyframe(
        service: Service, make_frame: Callable[..., str], page: Page) -> None:
    frame = make_frame()
    agent = service.token("drive", subject="agent")
    await open_viewer(page, service.base, service.token("view"), [frame])
    await wait_pixel(page, frame, ANIM, RED)
    await start_trace(page, frame, ANIM)
    f = json.dumps(frame)
    # A fresh keyframe first: the service sends at most one IDR a second, so the one the gap asks for below comes
    # up to a second later, and the deltas in between show what the viewer does while it waits. (After a quiet
    # second, so that no IDR of the watch is still pending and this one comes at once.)
    await page.wait_for(f"Date.now() * 1000 - window.framestream.client.info({f}).lastDraw.drawnUs > 1.1e6",
                        within=15)
    await page.eval(f"window.framestream.client.requestKeyframe({f})")
    await page.wait_for("(() => { const k = fsTrace.findIndex((e) => e.keyframe);"
                        " return k >= 0 && fsTrace.slice(k).some((e) => e.drawn !== undefined); })()",
                        within=10, interval=0.01)
    # Lose the next picture on the way, then make the page animate (1.5 s of colours, then blue).
    await page.eval(f"window.framestream.client._debugDropNext({f}, 1)")
    await post_input(service, frame, agent, click_events(ANIM))
    got = await wait_pixel(page, frame, ANIM, BLUE)
    await page.wait_for(f"window.framestream.client.info({f}).waitingForKeyframe === false")
    pictures = [e for e in await trace(page) if "action" in e]
    lost = [i for i, e in enumerate(pictures) if e["action"] == "lost"]
    assert len(lost) == 1, pictures
    gap = pictures[lost[0] + 1]
    assert gap["gap"] and gap["action"] == "drop" and gap["requestKeyframe"], gap
    assert gap["sequence"] == (pictures[lost[0]]["sequence"] + 1) & 0xFFFFFFFF
    key = next(i for i in range(lost[0] + 1, len(pictures)) if pictures[i]["keyframe"])
    waiting = pictures[lost[0] + 1 : key]
    # Every delta after the gap is dropped until the keyframe; the canvas keeps the last good picture (red)
    # meanwhile, although the page was animating; one request for all of them (at most one more a second later).
    assert all(e["action"] == "drop" and not e["keyframe"] for e in waiting), waiting
    assert all(close_to(e["px"], RED) for e in waiting), [e["px"] for e in waiting]
    requests = [e for e in waiting if e["requestKeyframe"]]
    assert len(waiting) >= 3, waiting
    assert 1 <= len(requests) <= 2 and (len(requests) == 1 or requests[1]["t"] - requests[0]["t"] >= 1000)
    # From the keyframe on, every picture is decoded, in sequence, and the final picture is the page's.
    after = pictures[key:]
    assert all(e["action"] == "decode" for e in after), after
    assert all((b["sequence"] - a["sequence"]) & 0xFFFFFFFF == 1 for a, b in itertools.pairwise(after))
    assert any(not e["keyframe"] for e in after), "deltas after the keyframe are drawn too"
    i = await info(page, frame)
    assert i["gaps"] == 1 and i["dropped"] == len(waiting)
    print(f"lost #{pictures[lost[0]]['sequence']}; {len(waiting)} deltas dropped (canvas stayed "
          f"{waiting[-1]['px']}) with {len(requests)} keyframe request(s); keyframe #{pictures[key]['sequence']}, "
          f"then {len(after) - 1} pictures decoded; anim pixel {got}")


async def test_a_broken_decoder_asks_for_a_keyframe_and_the_stream_goes_on(
        service: Service, make_frame: Callable[..., str], page: Page) -> None:
    frame = make_frame()
    f = json.dumps(frame)
    await open_viewer(page, service.base, service.token("view"), [frame])
    await wait_pixel(page, frame, BOX, RED)
    before = await info(page, frame)
    await start_trace(page, frame, BOX)
    # The wipe is read back in the same task: a picture already decoded before the junk may be drawn over it
    # right after (CI saw the page's refinement come in between), which the checks below allow.
    wiped = await page.eval(f"window.framestream.client._debugCorrupt({f}, {{wipe: '#ff00ff'}})"
                            f" && fsPixel({f}, {BOX[0]}, {BOX[1]})")
    assert close_to(wiped, MAGENTA)
    box = await wait_pixel(page, frame, BOX, RED, within=10)
    white = await wait_pixel(page, frame, BLANK, WHITE, within=5)
    after = await info(page, frame)
    assert after["decoderErrors"] == before["decoderErrors"] + 1
    assert after["keyframeRequests"] > before["keyframeRequests"]
    # and the stream goes on: the page changes, its deltas are decoded and drawn
    await post_input(service, frame, service.token("drive", subject="agent"), click_events(ANIM))
    anim = await wait_pixel(page, frame, ANIM, BLUE)
    pictures = [e for e in await trace(page) if "action" in e]
    key = next(i for i, e in enumerate(pictures) if e["keyframe"])
    deltas = [e for e in pictures[key:] if not e["keyframe"] and e["action"] == "decode"]
    assert len(deltas) >= 3, pictures
    print(f"after the decoder error: box {box}, background {white}; then {len(deltas)} deltas decoded, anim {anim}")


async def test_input_is_mapped_and_reaches_the_page(service: Service, make_frame: Callable[..., str],
                                                    page: Page) -> None:
    frame = make_frame()
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
    await wait_pixel(page, frame, BOX, RED)
    f = json.dumps(frame)
    await page.eval("window.fsErrors = []; window.framestream.client.on('error', (d) => fsErrors.push(d))")
    assert (await view(page, frame))["mode"] == "driving"
    idle = "window.framestream.client.inputInFlight === 0"

    # The canvas shown at half its size: a click at the box's CSS (100, 80) still lands there in the page.
    await page.eval(f"document.querySelector('canvas[data-frame={f}]').style.width = '320px'")
    assert await page.eval(f"document.querySelector('canvas[data-frame={f}]').getBoundingClientRect().width") == 320
    x, y = await canvas_point(page, frame, (100, 80))
    await page.click(x, y)
    green = await wait_pixel(page, frame, BOX, GREEN)
    r = await wait_regs(page, frame, lambda r: r["downs"] == 1 and r["ups"] == 1)
    # one viewer pixel is two frame pixels at this size
    assert abs(r["downX"] - 100) <= 2 and abs(r["downY"] - 80) <= 2, r
    assert bits(r["downBits"]) == {"button": 0, "buttons": 1, "detail": 1, "modifiers": 0}
    assert bits(r["upBits"]) == {"button": 0, "buttons": 0, "detail": 1, "modifiers": 0}
    assert r["boxClicks"] == 1
    print(f"click at half size: page saw down at ({r['downX']}, {r['downY']}), box {green}")

    # Keys go with their DOM key and code (the click gave the frame the keyboard).
    await page.key("r", "KeyR", "r", 82)
    r = await wait_regs(page, frame, lambda r: r["keydowns"] == 1 and r["keyups"] == 1)
    assert (r["downKey"], r["downCode"], r["downMods"]) == (hash24("r"), hash24("KeyR"), 0)
    assert (r["upKey"], r["upCode"], r["held"]) == (hash24("r"), hash24("KeyR"), 0)
    # The modifier mask: Shift+Ctrl held while A goes down (Ctrl 2 + Shift 8).
    await page.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "A", "code": "KeyA", "modifiers": 10,
                                               "windowsVirtualKeyCode": 65})
    r = await wait_regs(page, frame, lambda r: r["keydowns"] == 2)
    assert (r["downKey"], r["downCode"], r["downMods"], r["held"]) == (hash24("A"), hash24("KeyA"), 10, 1), r
    # A is still down: the viewer losing the keyboard releases it in the page (no stuck key).
    await page.eval("document.activeElement.blur()")
    r = await wait_regs(page, frame, lambda r: r["keyups"] == 2)
    assert (r["upKey"], r["upCode"], r["upMods"], r["held"]) == (hash24("A"), hash24("KeyA"), 0, 0), r
    print(f"keys: r, then Shift+Ctrl+A (page saw modifiers {r['downMods']}), released on blur (held {r['held']})")

    # A double click: the second down carries clicks 2, and the page gets its dblclick.
    x, y = await canvas_point(page, frame, DBL)
    for count in (1, 2):
        await page.mouse("mousePressed", x, y, button="left", click_count=count, buttons=1)
        await page.mouse("mouseReleased", x, y, button="left", click_count=count, buttons=0)
    blue = await wait_pixel(page, frame, DBL, BLUE)
    r = await wait_regs(page, frame, lambda r: r["downs"] == 3 and r["ups"] == 3 and r["dblclicks"] == 1)
    assert bits(r["downBits"])["detail"] == 2, bits(r["downBits"])
    print(f"double click: dbl area {blue}, last down {bits(r['downBits'])}")

    # A right-button drag that leaves the canvas goes on, clamped to the frame's edge; moves carry the button.
    # Unclamped, the moves and the up out there would be refused by the service (`bad-input`: outside the frame).
    x, y = await canvas_point(page, frame, BLANK)
    await page.mouse("mousePressed", x, y, button="right", click_count=1, buttons=2)
    for i in range(1, 21):
        await page.mouse("mouseMoved", x + i * 40, y, button="right", buttons=2)
    await page.mouse("mouseReleased", x + 800, y, button="right", click_count=1, buttons=0)
    await page.wait_for(idle, within=10)
    r = await wait_regs(page, frame, lambda r: r["ups"] == 4)
    assert bits(r["downBits"])["button"] == 2 and bits(r["upBits"])["button"] == 2
    assert r["dragButtons"] == 2 and abs(r["dragY"] - BLANK[1]) <= 2
    assert 3 <= r["dragMoves"] <= 20
    # The up came at the frame's last column (639.99 -> clientX 639). The moves the page saw end where its
    # viewport ends: the service's Chromium viewport is 639 px wide for a 640 px frame (innerWidth register), and
    # Chromium sends no mousemove to the page beyond it.
    assert r["upX"] == CSS_W - 1 and abs(r["upY"] - BLANK[1]) <= 2, r
    assert r["dragMaxX"] >= r["innerWidth"] - 80 and r["dragMaxX"] < CSS_W, r
    assert await page.eval("fsErrors") == []
    print(f"drag: {r['dragMoves']} moves reached the page, furthest x {r['dragMaxX']} (page viewport "
          f"{r['innerWidth']}x{r['innerHeight']}), up at x {r['upX']}")

    # The wheel, at the pointer's position in the frame.
    x, y = await canvas_point(page, frame, (100, 80))
    await page.send("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": 120})
    r = await wait_regs(page, frame, lambda r: r["wheels"] >= 1)
    assert r["wheelDY"] - OFFSET == 120 and r["wheelDX"] == OFFSET, r
    assert abs(r["wheelX"] - 100) <= 2 and abs(r["wheelY"] - 80) <= 2
    print(f"wheel: page saw deltaY {r['wheelDY'] - OFFSET} at ({r['wheelX']}, {r['wheelY']})")

    # Text (the IME / paste path) into the page's field.
    await click_css(page, frame, FIELD)
    await page.wait_for(idle, within=10)
    await page.send("Input.insertText", {"text": "héllo"})
    r = await wait_regs(page, frame, lambda r: r["textLength"] == 5)
    assert r["textHash"] == hash24("héllo"), r
    await page.wait_for(idle, within=10)
    assert await page.eval("window.framestream.client.seq") >= 10
    assert await page.eval("fsErrors") == []
    assert (await view(page, frame))["driver"] == "driven by ana"


async def test_control_taken_back_and_superseded_input_are_shown(service: Service, make_frame: Callable[..., str],
                                                                 page: Page) -> None:
    frame = make_frame()
    f = json.dumps(frame)
    ana_old = service.token("drive", subject="ana")
    await asyncio.sleep(0.01)  # later iat
    # bob drives first, with a newer grant than the one in ana's link
    await post_input(service, frame, service.token("drive", subject="bob"),
                     [{"kind": "mouse", "action": "move", "x": 5, "y": 5, "button": "none", "buttons": 0,
                       "clicks": 0, "modifiers": 0}])
    await open_viewer(page, service.base, ana_old, [frame])
    await wait_pixel(page, frame, BOX, RED)
    await page.wait_for(f"fsView({f}).driver === 'driven by bob'")
    assert (await view(page, frame))["mode"] == "driving"  # nothing said otherwise yet
    # ana clicks: refused as superseded, shown, and the page does not change.
    await click_css(page, frame, BOX)
    await page.wait_for(f"fsView({f}).mode === 'control taken back'")
    toast = (await view(page, frame))["toast"]
    assert toast.startswith("Control taken back: someone with a newer grant drives"), toast
    await page.wait_for("window.framestream.client.inputInFlight === 0")
    await asyncio.sleep(0.5)
    red = await pixel(page, frame, BOX)
    assert close_to(red, RED)
    print(f"superseded: toast {toast!r}, box still {red}")

    # ana gets a newer grant (sendInput's `grant`): she drives again, and her click lands.
    ana_new = json.dumps(service.token("drive", subject="ana"))
    await page.eval(f"window.framestream.client.sendInput({f}, {json.dumps(click_events(BOX))}, {{grant: {ana_new}}})")
    await page.wait_for(f"fsView({f}).mode === 'driving' && fsView({f}).driver === 'driven by ana'")
    green = await wait_pixel(page, frame, BOX, GREEN)

    # bob takes control back with a newer grant still: the viewer is told at once, by whom.
    await asyncio.sleep(0.01)
    await post_input(service, frame, service.token("drive", subject="bob"),
                     [{"kind": "mouse", "action": "move", "x": 6, "y": 6, "button": "none", "buttons": 0,
                       "clicks": 0, "modifiers": 0}])
    await page.wait_for(f"fsView({f}).mode === 'control taken back'")
    v = await view(page, frame)
    assert (v["toast"], v["driver"]) == ("Control taken back by bob", "driven by bob"), v
    assert close_to(await pixel(page, frame, BOX), GREEN)
    print(f"ana drove again with a newer grant (box {green}); taken back: {v}")


async def test_paused_and_closed_show_over_the_last_picture(service: Service, make_frame: Callable[..., str],
                                                            page: Page) -> None:
    frame = make_frame()
    f = json.dumps(frame)
    await open_viewer(page, service.base, service.token("view"), [frame])
    await wait_pixel(page, frame, BOX, RED)
    # Paused: a watched frame never pauses; the viewer stops watching, the idle rule pauses the frame, and when
    # the viewer watches again the service tells it `paused` before resuming it.
    await page.eval(f"window.framestream.client.unwatch({f})")
    await service.wait_state_async(frame, "paused", 15)
    # Recorded from the new watch on: a `live` told before the unwatch (held up to 50 ms by the service's pace for
    # frame-states, or a page event's) must not stand for the resume's (CI under load: the resumed picture was
    # drawn while the resume's `live` was still held, and the earlier `live` ended the wait below).
    await page.eval(f"fsRecord({f}, {json.dumps(list(BOX))})")
    drawn = (await info(page, frame) or {}).get("drawn", 0)
    await page.eval(f"window.framestream.client.watch({f}, document.querySelector('canvas[data-frame={f}]'))")
    await page.wait_for(f"fsRecords[{f}].some((r) => r.state === 'live')")
    await page.wait_for(f"window.framestream.client.info({f}).drawn > {drawn}")
    recs = await records(page, frame)
    paused = next(r for r in recs if r["state"] == "paused")
    assert paused["overlay"] == "Paused" and paused["state"] == "paused", paused
    assert close_to(paused["px"], RED), paused  # the last picture under the overlay, not a black box
    assert recs[-1]["state"] == "live" and live_over(recs[-1], RED), recs
    assert (await view(page, frame))["overlay"] is None
    red = await wait_pixel(page, frame, BOX, RED)
    print(f"paused: {paused}; live again, box {red}")

    # Closed: the frame is ended while watched.
    status, _ = await asyncio.to_thread(service.request, "DELETE", f"/frames/{frame}")
    assert status == 200
    await page.wait_for(f"fsRecords[{f}].some((r) => r.state === 'closed')")
    closed = next(r for r in await records(page, frame) if r["state"] == "closed")
    assert closed["overlay"] == "Closed: deleted" and closed["state"] == "closed", closed
    assert close_to(closed["px"], RED), closed
    await asyncio.sleep(0.3)
    v = await view(page, frame)
    assert (v["overlay"], v["state"]) == ("Closed: deleted", "closed")
    px = await pixel(page, frame, BOX)
    assert close_to(px, RED)
    print(f"closed: {v}, box under the overlay {px}")


async def test_a_page_that_cannot_load_shows_the_error_over_its_picture(
        service: Service, make_frame: Callable[..., str], page: Page) -> None:
    frame = make_frame(url="http://127.0.0.1:9/")
    f = json.dumps(frame)
    await open_viewer(page, service.base, service.token("view"), [frame])
    await page.wait_for(f"fsView({f}).state === 'error'")
    v = await view(page, frame)
    assert v["overlay"].startswith("Error: could not load http://127.0.0.1:9/: net::ERR_"), v
    # Chromium shows its error page, and the viewer draws it under the overlay (white, not a black box).
    await page.wait_for(f"window.framestream.client.info({f}).drawn > 0")
    white = await wait_pixel(page, frame, (20, 20), WHITE)
    print(f"error: {v['overlay']!r}; canvas under it {white}")


async def test_stats_overlay_toggles_with_s_and_shows_numbers(service: Service, make_frame: Callable[..., str],
                                                              page: Page) -> None:
    frame = make_frame()
    f = json.dumps(frame)
    await open_viewer(page, service.base, service.token("view"), [frame])
    await wait_pixel(page, frame, BOX, RED)
    stats = f"document.querySelector('.fs-frame[data-frame={f}] .fs-stats')"
    assert await page.eval(f"{stats}.hidden") is True
    await page.key("s", "KeyS", "s", 83)
    assert await page.eval(f"{stats}.hidden") is False
    await post_input(service, frame, service.token("drive", subject="agent"), click_events(ANIM))
    text, snap = await page.wait_for(
        f"(() => {{ const t = {stats}.textContent; const s = window.framestream.client.info({f}).stats;"
        " return /latency \\d+\\.\\d ms/.test(t) && s.latencyMs !== null ? [t, s] : null; })()", within=10,
        interval=0.05)
    assert "fps" in text and "kbit/s" in text and "decode" in text and "640x400 avc1." in text, text
    assert snap["fps"] > 0 and snap["kbps"] > 0
    assert 0 <= snap["latencyMs"] < 1000  # same clock: capture to display within a second
    await page.key("s", "KeyS", "s", 83)
    assert await page.eval(f"{stats}.hidden") is True
    print(f"stats: {text!r}")


async def test_refused_token_is_not_retried(service: Service, page: Page) -> None:
    forged = mint_token("another-secret-0123456789-abcdefghijklmnopqrstuvwxyz", role="view", sandbox_id="test")
    await open_viewer(page, service.base, forged, ["anything"])
    await page.wait_for("window.framestream.client.state === 'closed'")
    msg = await page.eval("document.getElementById('page-msg').textContent")
    assert "refused" in msg and "4401" in msg, msg
    assert await page.eval("document.getElementById('conn').textContent") == "disconnected (4401)"
    await asyncio.sleep(1.0)  # the first reconnect would have come within 250 ms
    assert await page.eval("window.framestream.client.connections") == 1
    print(f"refused: {msg!r}")


async def test_go_live_form_follows_shared_frames(service: Service, page: Page,
                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    await open_viewer(page, service.base, service.token("view"), [])
    await page.wait_for("window.framestream.config !== null")
    assert await page.eval("document.getElementById('golive').hidden") is False
    off = Service(tmp_path_factory.mktemp("shared-off"), env_extra={"SHARED_FRAMES": "off"})
    await asyncio.to_thread(off.start)
    try:
        await open_viewer(page, off.base, off.token("view"), [])
        await page.wait_for("window.framestream.config !== null && window.framestream.client.state === 'open'")
        assert await page.eval("window.framestream.config.shared_frames") is False
        assert await page.eval("window.framestream.client.welcome.shared_frames") is False
        assert await page.eval("document.getElementById('golive').hidden") is True
        await page.wait_for("document.getElementById('page-msg').textContent === 'No frame is live yet.'")
        status, body = await asyncio.to_thread(off.request, "POST", "/frames",
                                               {"url": "http://127.0.0.1:9/", "width": 640, "height": 400})
        assert (status, body["error"]) == (403, "shared-frames-off")
    finally:
        await asyncio.to_thread(off.stop)


async def test_service_restart_reconnects_and_the_picture_comes_back(
        service: Service, make_frame: Callable[..., str], page: Page) -> None:
    frame = make_frame()
    f = json.dumps(frame)
    await open_viewer(page, service.base, service.token("view"), [frame])
    await wait_pixel(page, frame, BOX, RED)
    # The page's box turns green before the restart; the page is loaded afresh (red) after it, so a red box can
    # only come from pictures streamed after the reconnection.
    await post_input(service, frame, service.token("drive", subject="agent"), click_events(BOX))
    await wait_pixel(page, frame, BOX, GREEN)
    at = json.dumps(list(BOX))
    await page.eval(f"fsRecord({f}, {at}) && fsRecordCloses({f}, {at})")
    port = service.port
    try:
        await asyncio.to_thread(service.stop)
        # The service closed the viewer with 1001: the view says so over the last picture (green), and the
        # viewer keeps trying.
        await page.wait_for("fsCloses.length > 0")
        first = (await page.eval("fsCloses"))[0]
        assert first["code"] == 1001 and first["reconnectInMs"] is not None, first
        assert (first["overlay"], first["state"]) == ("Reconnecting…", "offline"), first
        assert first["conn"].startswith("reconnecting in") and close_to(first["px"], GREEN), first
        # Down for good now (the process has exited): every attempt fails, and the view still says so.
        await page.wait_for(f"fsView({f}).overlay === 'Reconnecting…' && fsCloses.length >= 2")
        assert (await view(page, frame))["state"] == "offline"
    finally:
        if service.proc is None or service.proc.poll() is not None:
            await asyncio.to_thread(service.start)
    assert service.port == port
    await page.wait_for("window.framestream.client.state === 'open'", within=30)
    red = await wait_pixel(page, frame, BOX, RED, within=30)
    await page.wait_for(f"fsView({f}).overlay === null")
    assert await page.eval("document.getElementById('conn').textContent") == "connected"
    connections = await page.eval("window.framestream.client.connections")
    assert connections >= 3  # the first, the refused attempts while down, the one after the restart
    # Re-watched after the restart: the reopened frame said `closed`, then `launching`, over the last picture.
    # (Today the old process still accepts connections while it shuts down: the viewer may get back in and make
    # it relaunch the browser. Then the first `closed` and `launching` come from it, also over the green box.)
    recs = await records(page, frame)
    states = [r["state"] for r in recs]
    assert "closed" in states and "launching" in states and states[-1] == "live", recs
    closed = next(r for r in recs if r["state"] == "closed")
    launching = next(r for r in recs if r["state"] == "launching")
    assert closed["overlay"] == "Closed" and launching["overlay"] == "Starting…", recs
    assert close_to(closed["px"], GREEN) and close_to(launching["px"], GREEN), recs
    assert live_over(recs[-1], GREEN), recs
    assert (await asyncio.to_thread(service.get, f"/frames/{frame}"))[1]["viewers"] == 1
    print(f"closed 1001: {first}; {connections} connections; states: {states}; "
          f"'Starting…' over {launching['px']}; then box {red}")


async def test_a_path_that_died_silently_is_noticed_and_the_picture_catches_up(
        service: Service, make_frame: Callable[..., str], page: Page) -> None:
    """The path between viewer and service stops carrying anything, with no close on either side (a laptop that
    slept, a NAT that dropped the connection; tests/silent_path.py). The browser's WebSocket is never told. The
    viewer's own check (web/lib/liveness.js, at its default times) must notice: once its ping is late it says
    `Checking connection…` over its last picture, then `Reconnecting…`, reconnects over the path that came back,
    and shows the page as it is now."""
    frame = make_frame()
    f = json.dumps(frame)
    async with SilentPath(service.port) as path:
        await open_viewer(page, path.base, service.token("view"), [frame])
        await wait_pixel(page, frame, BOX, RED)
        at = json.dumps(list(BOX))
        await page.eval(f"fsRecord({f}, {at}) && fsRecordCloses({f}, {at})")
        assert path.cut() >= 1
        cut_at = time.monotonic()
        # The page changes while the path is dead: its box turns green, and nothing of it reaches the viewer.
        await post_input(service, frame, service.token("drive", subject="agent"), click_events(BOX))
        await page.wait_for(f"fsView({f}).overlay === 'Checking connection…'", within=60)
        quiet = time.monotonic() - cut_at
        assert close_to(await pixel(page, frame, BOX), RED)  # the old picture, no longer shown as live
        assert await page.eval("fsCloses.length") == 0
        await page.wait_for("fsCloses.length > 0", within=60)
        noticed = time.monotonic() - cut_at
        first = (await page.eval("fsCloses"))[0]
        assert (first["code"], first["reason"]) == (1006, "no answer from the service"), first
        assert first["reconnectInMs"] is not None, first
        assert (first["overlay"], first["state"]) == ("Reconnecting…", "offline"), first
        assert close_to(first["px"], RED), first  # the last picture it had, now said to be old
        green = await wait_pixel(page, frame, BOX, GREEN, within=30)
        await page.wait_for(f"fsView({f}).overlay === null && fsView({f}).state === 'live'")
        assert await page.eval("document.getElementById('conn').textContent") == "connected"
        assert await page.eval("window.framestream.client.connections") == 2  # the first socket, then the new one
    print(f"silent path: checking after {quiet:.1f} s, given up after {noticed:.1f} s: {first}; then box {green}")


async def test_a_hidden_viewer_takes_no_pictures_lets_the_frame_pause_and_comes_back_to_the_page_as_it_is(
        service: Service, make_frame: Callable[..., str], page: Page) -> None:
    """A person leaves the viewer in a background tab: another tab comes to the front, the real visibilitychange
    (tests/web/hidden_view.py says what must hold, here and in Firefox). Hidden, it still hears an agent's request
    for help."""
    frame = make_frame()
    await open_viewer(page, service.base, service.token("view"), [frame])
    other: dict[str, Any] = {}

    async def hide() -> None:
        other.update(await page.send("Target.createTarget", {"url": "about:blank"}))

    async def show() -> None:
        await page.send("Target.closeTarget", {"targetId": other["targetId"]})

    def agent(frame_id: str = frame) -> str:  # a one-step grant, as an agent's every step
        return service.token("drive", frame=frame_id, subject="agent", step=True)

    async def ask_for_help() -> None:
        # The agent's request for help reaches the hidden viewer: its page's title says so in the tab strip.
        async with await Client.connect(service.base, token=service.token("drive", subject="agent"),
                                        grants=agent) as client:
            asking = asyncio.create_task(client.request_help(frame, "log in, please", timeout=2))
            await page.wait_for("document.title === '(1) agent asks for help · framestream'")
            assert await asking is None  # nobody took over: the request ends, and the title goes back
            await page.wait_for("document.title === 'framestream'")

    seen = await hidden_and_back(page, service, frame, at=BOX, before=RED, after=GREEN, hide=hide, show=show,
                                 change=lambda: post_input(service, frame, agent(), click_events(BOX)),
                                 while_hidden=ask_for_help)
    print(seen)


async def test_a_view_out_of_sight_takes_no_pictures_and_its_frame_pauses_while_the_one_in_sight_goes_on(
        service: Service, make_frame: Callable[..., str], page: Page) -> None:
    """A canvas of several frames, one of them scrolled out of sight: its view watches its frame without pictures
    (mountFrame's IntersectionObserver, `client.setOffscreen`), so that frame pauses while the one in sight stays
    live. Scrolled into sight, it shows its page as it is now."""
    near, far = make_frame(), make_frame()
    await open_viewer(page, service.base, service.token("view"), [near, far])
    await wait_pixel(page, near, BOX, RED)
    await wait_pixel(page, far, BOX, RED)
    n, f = json.dumps(near), json.dumps(far)
    # The second view is laid out far below the window's bottom.
    await page.eval(f"(() => {{ document.querySelector('.fs-frame[data-frame=\"{far}\"]').style.marginTop = '4000px';"
                    " return true; })()")
    await page.wait_for(f"window.framestream.client.info({f}).offscreen")
    await service.wait_state_async(far, "paused", 15)
    await page.wait_for(f"fsView({f}).state === 'paused'")  # it still hears its frame's state
    assert (await asyncio.to_thread(service.get, f"/frames/{near}"))[1]["state"] == "live"
    # Meanwhile its page changes: an agent's click turns its box green (the frame resumes for it, then pauses).
    await post_input(service, far, service.token("drive", frame=far, subject="agent", step=True), click_events(BOX))
    await service.wait_state_async(far, "paused", 15)
    assert close_to(await pixel(page, far, BOX), RED)
    # Scrolled to it: the far view is in sight, the near one out of it.
    await page.eval(f"document.querySelector('.fs-frame[data-frame=\"{far}\"]').scrollIntoView() ?? 1")
    green = await wait_pixel(page, far, BOX, GREEN)
    await page.wait_for(f"fsView({f}).overlay === null && window.framestream.client.info({n}).offscreen")
    await service.wait_state_async(near, "paused", 15)
    assert not (await info(page, far))["offscreen"]
    print(f"out of sight: paused while the other stayed live; in sight again: box {green}")


async def test_a_view_under_another_one_full_screen_takes_no_pictures_and_shows_its_page_as_it_is_after(
        service: Service, make_frame: Callable[..., str], page: Page) -> None:
    """Two views, one full screen: the other is covered (its IntersectionObserver still says it is in sight), so it
    watches its frame without pictures and that frame pauses, while the full-screen one stays live. Out of full
    screen, the covered view shows its page as it is now, an agent's click on it included."""
    front, behind = make_frame(), make_frame()
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [front, behind])
    await wait_pixel(page, front, BOX, RED)
    await wait_pixel(page, behind, BOX, RED)
    b = json.dumps(behind)
    button = f"document.querySelector('.fs-frame[data-frame=\"{front}\"] .fs-full-toggle')"
    centre = f"(() => {{ const r = {button}.getBoundingClientRect(); return [r.left + r.width / 2, r.top + 8]; }})()"
    await page.click(*await page.eval(centre))  # a real click: full screen needs a user's gesture
    await page.wait_for(f"document.fullscreenElement === {button}.closest('.fs-frame')")
    await page.wait_for(f"window.framestream.client.info({b}).offscreen")
    await service.wait_state_async(behind, "paused", 15)
    assert (await asyncio.to_thread(service.get, f"/frames/{front}"))[1]["state"] == "live"
    await post_input(service, behind, service.token("drive", frame=behind, subject="agent", step=True),
                     click_events(BOX))
    await service.wait_state_async(behind, "paused", 15)
    assert close_to(await pixel(page, behind, BOX), RED)  # not drawn while covered
    await page.click(*await page.eval(centre))
    await page.wait_for("document.fullscreenElement === null")
    green = await wait_pixel(page, behind, BOX, GREEN)
    await page.wait_for(f"fsView({b}).overlay === null")
    print(f"covered by a full-screen view: paused; uncovered: box {green}")


async def test_a_view_out_of_sight_from_the_start_never_resumes_its_paused_frame(
        service: Service, make_frame: Callable[..., str], page: Page) -> None:
    """An app adds a view of a paused frame where the person does not look (far below, as a canvas places a frame
    away from the part in sight) on its open connection: the view watches the frame without pictures from its first
    watch on, so the frame is never resumed for it (nor, closed, reopened)."""
    near, far = make_frame(), make_frame()
    await service.wait_state_async(far, "paused", 15)  # nobody watches it yet
    await open_viewer(page, service.base, service.token("view"), [near])
    await wait_pixel(page, near, BOX, RED)
    f = json.dumps(far)
    # What the client sends, recorded as it goes (then sent as before).
    await page.eval("""(() => { const t = window.framestream.client.transport, send = t.send.bind(t);
      window.fsSent = []; t.send = (m) => { window.fsSent.push(m); return send(m); }; return true; })()""")
    await page.eval(f"""(async () => {{ const {{ mountFrame }} = await import('./web/framestream.js');
      const box = document.createElement('div');
      box.style.marginTop = '4000px';
      document.body.append(box);
      mountFrame(window.framestream.client, {f}, box);
      return true; }})()""")
    await page.wait_for(f"fsView({f}).state === 'paused' && window.framestream.client.info({f}).offscreen")
    sent = await page.eval(f"window.fsSent.filter((m) => m.frame === {f})")
    assert sent == [{"type": "watch", "frame": far, "video": False}], sent
    seen = await info(page, far)
    assert (seen["config"], seen["drawn"]) == (None, 0), seen
    assert (await asyncio.to_thread(service.get, f"/frames/{far}"))[1]["state"] == "paused"
    assert await asyncio.to_thread(metric, service, "framestream_hidden_watchers", f'frame="{far}"') == 1
    # Without a picture yet, its canvas already takes the frame's CSS size (from frame-state's `width` and
    # `height`): nothing moves when the pictures come.
    laid_out = (f"(() => {{ const r = document.querySelector('canvas[data-frame=\"{far}\"]').getBoundingClientRect();"
                " return [r.width, r.height, r.top + window.scrollY]; })()")
    before = await page.eval(laid_out)
    assert before[:2] == [CSS_W, CSS_H], before
    # Scrolled into sight, it resumes and shows its page.
    await page.eval(f"document.querySelector('.fs-frame[data-frame=\"{far}\"]').scrollIntoView() ?? 1")
    await wait_pixel(page, far, BOX, RED)
    assert await page.eval(laid_out) == before
    print("out of sight from the start: stayed paused, laid out at its size; in sight: resumed and drawn there")
