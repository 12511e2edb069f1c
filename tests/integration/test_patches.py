"""Small changes as lossless patches beside H.264 (issue 11), end to end: real Xvfb, Chromium and libx264.

A patch-aware client (tests/patch_client.py) asks for `patches` in hello and composes patches and video; a client
without the feature must get today's stream, H.264 only. No timing is asserted: each test waits for messages.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
import pytest

from framestream.client import Client
from framestream.core.wire import FLAG_KEYFRAME, FLAG_REFINEMENT
from tests.fixtures import service_fixture
from tests.patch_client import PatchClient, screenshot_rgb
from tests.support import Service

pytestmark = pytest.mark.integration

# Frames are never released here: a released frame's joiner gets the keyframe kept at the release and then its new
# encoder's own (docs/protocol.md, "Frame lifecycle"), and these tests count every message after the first
# keyframe. On a slow CI run the scroller, watched last, had been released and its second keyframe counted as a
# change that did not go as patches.
service = service_fixture("spinner.html@320x200", "typing.html@480x120", "flip.html@320x200",
                          "crossing.html@1024x600", "scroller.html@960x540", scope="module",
                          env={"FRAMESTREAM_PAUSED_RELEASE_S": "600"})


def frame_of(service: Service, page: str) -> str:
    status, body = service.get("/frames")
    assert status == 200, body
    (frame,) = [f["id"] for f in body["frames"] if page in f["url"]]
    return str(frame)


async def driving(service: Service, page: str, subject: str,
                  features: tuple[str, ...] = ("patches",)) -> tuple[str, str, PatchClient]:
    """The frame showing `page`, a drive token for it, and a patch-aware client that watches it with that token,
    once its first keyframe is in."""
    frame = frame_of(service, page)
    token = service.token("drive", frame=frame, subject=subject)
    client = await PatchClient.connect(service, token, features=list(features))
    await client.watch(frame)
    while not (await client.next_message(30)).keyframe:
        pass
    return frame, token, client


async def screenshot_seen(service: Service, frame: str, client: PatchClient) -> np.ndarray:
    """A screenshot of the frame that the client has caught up with: its capture is no newer than the last message
    the client read, or the patched pixels already match it (a grab of repainted, identical pixels is newer than
    any message and sends none); otherwise the client reads on."""
    while True:  # (in a thread: the loop goes on reading the socket, as a viewer does)
        shot, shot_us = await asyncio.to_thread(screenshot_rgb, service, frame)
        region = client.patched
        if shot_us <= client.messages[-1].capture_us or (
                client.canvas is not None and region is not None and region.any()
                and np.array_equal(client.canvas[region], shot[region])):
            return shot
        await client.next_message()


async def settled(client: PatchClient, count: int = 10, timeout: float = 30.0) -> None:
    """Wait for `count` patch messages in a row (the page is in its steady state)."""
    run = 0
    while run < count:
        msg = await client.next_message(timeout)
        run = run + 1 if msg.patch else 0


async def test_welcome_lists_the_granted_features(service: Service) -> None:
    client = await PatchClient.connect(service, features=["patches", "no-such-feature"])
    assert client.welcome["features"] == ["patches"]
    await client.close()
    plain = await PatchClient.connect(service)
    assert "features" not in plain.welcome  # today's welcome, byte for byte
    await plain.close()


async def test_spinner_sends_patches_and_no_video_once_settled(service: Service) -> None:
    frame = frame_of(service, "spinner")
    client = await PatchClient.connect(service, features=["patches"])
    await client.watch(frame)
    first = await client.next_message(30)
    assert first.keyframe and not first.patch
    await settled(client)
    after = [await client.next_message() for _ in range(30)]
    # The joiner's keyframe was made while the spinner moved, so the service sharpens it once the page is still for
    # 0.12 s: on a loaded machine the renderer can stop that long (a SIGSTOPped renderer shows it). Those are at most
    # two H.264 refinements (media/sender.py, _REFINE_FRAMES); no other video may come once settled.
    others = [(i, m.kind, m.flags, m.sequence, len(m.payload)) for i, m in enumerate(after) if not m.patch]
    refinements = [o for o in others if o[2] & FLAG_REFINEMENT and not o[2] & FLAG_KEYFRAME]
    assert others == refinements and len(refinements) <= 2, (others, client.texts[-8:])
    sequences = [m.sequence for m in after]
    assert sequences == list(range(sequences[0], sequences[0] + 30)), "patches share the frame's numbering"
    assert client.gaps == 0
    if others:
        await settled(client, 30)  # the spinner's region is drawn by the patches after the last refinement
    spinner = client.patched
    assert spinner is not None
    ys, xs = np.nonzero(spinner)
    # The spinner is 32x32 CSS at (100, 100): 64x64 pixels at (200, 200) at dpr 2 (with a few pixels of
    # antialiasing around it); the text beside it may have been painted after the keyframe too.
    assert ys.min() >= 192 and ys.max() < 272 and xs.min() >= 192, (ys.min(), ys.max(), xs.min())
    assert spinner[200:264, 200:264].mean() > 0.5
    await client.close()


async def test_a_client_without_the_feature_gets_only_h264(service: Service) -> None:
    frame = frame_of(service, "spinner")
    client = await PatchClient.connect(service)
    await client.watch(frame)
    got = [await client.next_message(30) for _ in range(40)]
    assert got[0].keyframe
    assert all(not m.patch for m in got)
    assert client.gaps == 0 and client.canvas is not None
    await client.close()


async def test_a_plain_viewer_joining_turns_patches_back_into_video(service: Service) -> None:
    frame = frame_of(service, "spinner")
    patched = await PatchClient.connect(service, features=["patches"])
    await patched.watch(frame)
    await settled(patched)
    plain = await PatchClient.connect(service)
    await plain.watch(frame)
    got = [await plain.next_message(30) for _ in range(30)]
    assert got[0].keyframe and all(not m.patch for m in got)
    # The patch-aware viewer sees the same H.264 pictures from then on, in one numbering.
    video = [await patched.next_message() for _ in range(30)]
    assert not any(m.patch for m in video[-20:])
    assert patched.gaps == 0
    await plain.close()
    await patched.close()


def _key(action: str, letter: str) -> dict[str, Any]:
    return {"kind": "key", "action": action, "key": letter, "code": f"Key{letter.upper()}"}


async def test_typed_letters_are_patches_matching_the_screenshot_exactly(service: Service) -> None:
    frame, token, client = await driving(service, "typing", "typist")
    # That is the frame's kept keyframe; a frame that was paused makes a fresh one as it resumes, and a letter
    # typed before that is made would go in it, as video. So type once a keyframe asked now has come.
    asked = len(client.messages)
    await client.send({"type": "keyframe", "frame": frame})
    while not any(m.keyframe for m in client.messages[asked:]):
        await client.next_message(30)
    start = len(client.messages)
    typed_us = time.time_ns() // 1000
    for seq, letter in enumerate("patches", start=1):
        before = len(client.messages)
        await client.send({"type": "input", "frame": frame, "grant": token, "seq": seq,
                           "events": [_key("down", letter), _key("up", letter)]})
        # The sharpening owed to the first keyframe may come between letters; each letter is a patch.
        while not any(m.patch for m in client.messages[before:]):
            await client.next_message()
    # A joiner first gets the frame's last keyframe and the pictures since (made before it watched): only what
    # was captured after the first letter counts.
    typed = [m for m in client.messages[start:] if m.capture_us >= typed_us]
    kinds = [(m.kind, m.flags) for m in typed]
    # Besides patches: the keyframe the join asked for (at most one a second) and its sharpening.
    assert all(m.patch or m.refinement or m.keyframe for m in typed), kinds
    assert all(m.patch for m in client.messages[-3:]), f"no video once settled: {kinds}"
    # Wait until the last letter's patch is in: the screenshot then shows what the patches drew.
    assert client.canvas is not None and client.patched is not None
    shot = await screenshot_seen(service, frame, client)
    region = client.patched
    assert region.sum() > 0
    assert not any(not m.patch for m in client.messages[-5:]), "typing must not produce video pictures"
    assert np.array_equal(client.canvas[region], shot[region]), "patched pixels must equal the screenshot"
    await client.close()


async def test_a_whole_body_change_goes_as_video(service: Service) -> None:
    frame, token, client = await driving(service, "flip", "flipper")
    press = [{"kind": "mouse", "action": action, "x": 100, "y": 100} for action in ("down", "up")]
    await client.send({"type": "input", "frame": frame, "grant": token, "seq": 1, "events": press})
    clicked = len(client.messages)
    while client.canvas is None or abs(int(client.canvas[100, 100, 0]) - 220) > 12:
        await client.next_message()
    assert not any(m.patch for m in client.messages[clicked:]), [(m.kind, m.flags) for m in client.messages]
    await client.close()


async def test_a_box_crossing_the_page_goes_as_exact_patches(service: Service) -> None:
    """Issue 29: a box crossing the page and a counter far from it, damaged by Chromium as one rectangle of about
    1.5 million pixels at dpr 2, go out as patches of what changed (the box's edges, the digits), not as H.264
    pictures of whole rows; what they drew is the page, pixel for pixel."""
    frame, token, client = await driving(service, "crossing", "clicker")
    start = len(client.messages)
    clicked_us = time.time_ns() // 1000
    press = [{"kind": "mouse", "action": action, "x": 500, "y": 100} for action in ("down", "up")]
    await client.send({"type": "input", "frame": frame, "grant": token, "seq": 1, "events": press})
    done = (slice(44, 76), slice(1924, 1996))  # the green square at (960, 20) CSS, 40 px: inside its edges

    def green() -> bool:
        assert client.canvas is not None
        r, g, b = (int(v) for v in client.canvas[done].reshape(-1, 3).mean(axis=0))
        return g > 140 and r < 60 and b < 60

    while client.canvas is None or not green():
        await client.next_message(30)
    moved = [m for m in client.messages[start:] if m.capture_us >= clicked_us]
    kinds = [(m.kind, m.flags) for m in moved]
    assert sum(m.patch for m in moved) >= 20, kinds
    # Besides patches: at most the sharpening owed to the keyframe the join brought (no picture of a change).
    assert all(m.patch or m.refinement or m.keyframe for m in moved), kinds
    assert client.canvas is not None and client.patched is not None
    shot = await screenshot_seen(service, frame, client)
    region = client.patched
    assert region[610:790, 1810:1990].all(), "the box's last place came as patches"
    assert np.array_equal(client.canvas[region], shot[region]), "patched pixels must equal the screenshot"
    await client.close()


async def test_an_agents_client_takes_patches_and_leaves_them_on_for_the_people_watching(service: Service) -> None:
    """framestream.client asks for patches. A frame sends them only while every viewer takes them, so an agent
    watching without them turned them off for the people watching too; now both get the letters it types as
    patches, and the agent's picture has them pixel for pixel."""
    frame = frame_of(service, "typing")
    person = await PatchClient.connect(service, features=["patches"])
    await person.watch(frame)
    grants = service.token("drive", frame=frame, subject="agent", ttl=120)
    async with await Client.connect(service.base, token=service.token("view"), grants=grants) as agent:
        view = await agent.watch(frame)
        before = await view.settle(quiet=0.6, timeout=30)  # keyframe and its sharpening done
        typed_us = time.time_ns() // 1000
        await agent.type_text(frame, "agents")
        await view.picture_after(typed_us, where=lambda p: p.patched, timeout=30)
        while True:  # a screenshot taken while the agent's picture stayed the newest: the same pixels
            after = await view.settle(quiet=0.6, timeout=30)
            shot, _ = screenshot_rgb(service, frame)
            if await view.settle(quiet=0.6, timeout=30) is after:
                break
        assert after.patched, "the letters came as patches"
        drawn = (after.rgb != before.rgb).any(axis=2)
        assert drawn.sum() > 50
        assert np.array_equal(after.rgb[drawn], shot[drawn]), "patched pixels must equal the screenshot"
    while not person.messages or person.messages[-1].capture_us < after.capture_us:
        await person.next_message(30)  # the person's viewer, read up to the agent's last picture
    typed = [m for m in person.messages if m.capture_us >= typed_us]
    assert typed and all(m.patch or m.refinement or m.keyframe for m in typed), [(m.kind, m.flags) for m in typed]
    assert any(m.patch for m in typed)
    await person.close()


def wheel(service: Service, frame: str, token: str, seq: int, dy: float) -> None:
    event = {"kind": "wheel", "x": 480, "y": 270, "dx": 0, "dy": dy}
    status, body = service.request("POST", f"/frames/{frame}/input", {"seq": seq, "events": [event]}, token=token)
    assert status == 200, body


async def scrolled_as_copies(service: Service, frame: str, token: str, client: PatchClient, *, seq: int,
                             dy: float) -> tuple[np.ndarray, np.ndarray]:
    """Scroll the page by three wheel notches of `dy` CSS pixels until a copy came; the picture before and the
    screenshot the client then caught up with."""
    before, _ = await asyncio.to_thread(screenshot_rgb, service, frame)
    copies, start = client.copies, len(client.messages)
    for n in range(3):
        await asyncio.to_thread(wheel, service, frame, token, seq + n, dy)
    try:
        while client.copies == copies:
            await client.next_message()
    except AssertionError as exc:
        seen = [(m.kind, m.flags, len(m.payload)) for m in client.messages[start:]]
        raise AssertionError(f"no copy came: {seen}") from exc
    return before, await screenshot_seen(service, frame, client)


async def test_a_scroll_goes_as_copies_and_the_viewer_shows_the_page(service: Service) -> None:
    frame, token, client = await driving(service, "scroller", "scroller", ("patches", "copies"))
    assert client.welcome["features"] == ["patches", "copies"]
    start = len(client.messages)
    # At 960x540 dpr 2 a notch of Chromium's 53 CSS pixels brings 106 rows of 1920 pixels into view, one of 100
    # pixels 200 rows: more than patches' 128 Ki pixels, within a scroll's quarter of the picture.
    for seq, dy in ((1, 53.0), (10, -53.0), (20, 100.0)):  # down, back up, down two notches' worth
        before, shot = await scrolled_as_copies(service, frame, token, client, seq=seq, dy=dy)
        assert (shot != before).any(axis=(1, 2)).mean() > 0.5, "the page scrolled: most rows changed"
        assert client.canvas is not None and client.patched is not None
        # Every change of the scroll went as patches (H.264 refinements only sharpen the joiner's keyframe): the
        # copies moved what the viewer showed (the keyframe's pixels, within H.264's tolerance) and the strips that
        # came into view are exact, wherever they moved to.
        changes = [m for m in client.messages[start:] if not m.refinement]
        assert all(m.patch for m in changes), [(m.kind, m.flags, len(m.payload)) for m in changes]
        exact = client.patched
        assert exact.sum() > 100 * 1920, "the strips that came into view, drawn exactly"
        assert np.array_equal(client.canvas[exact], shot[exact])
        assert np.abs(client.canvas.astype(int) - shot.astype(int)).mean() < 3
    assert client.gaps == 0
    await client.close()


async def test_without_copies_a_scroll_goes_as_h264(service: Service) -> None:
    """A viewer that takes patches but not copies: the frame sends every viewer the scroll as H.264, and each ends
    on the page."""
    frame, token, copying = await driving(service, "scroller", "scroller", ("patches", "copies"))
    plain = await PatchClient.connect(service, features=["patches"])
    await plain.watch(frame)
    while not (await plain.next_message(30)).keyframe:
        pass
    copies = copying.copies
    for n in range(3):
        await asyncio.to_thread(wheel, service, frame, token, 40 + n, -53.0)
    shot = await screenshot_seen(service, frame, plain)
    for client in (copying, plain):
        await screenshot_seen(service, frame, client)
        assert client.canvas is not None
        assert np.abs(client.canvas.astype(int) - shot.astype(int)).mean() < 3
    assert copying.copies == copies, "no copies while a viewer cannot take them"
    await plain.close()
    await copying.close()
