"""Handing a frame between a person and an agent, against the real service (Xvfb, Chromium, libx264, WebSockets):
a person who takes over holds it, hands it back with a note that reaches the agent's request for help, loses the
hold when idle or gone; grants that may not drive cannot hold, release or ask (docs/protocol.md, "Handing over")."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from framestream.client import Client, SandboxKey, Superseded, TakenOver, png_to_rgb
from framestream.core.tokens import derive_key, mint
from tests.client.agent_page import BUTTON, FIELD, GREY, RED, near, typed_text
from tests.fixtures import service_fixture
from tests.support import TEST_SECRET, Service, forged

pytestmark = pytest.mark.integration

WHITE, GREEN = (255, 255, 255), (30, 160, 60)
HOLD_S = 3.0  # FRAMESTREAM_PERSON_HOLD_S here: short, so an idle person loses the hold within a test
service = service_fixture(scope="module", env={"FRAMESTREAM_PERSON_HOLD_S": str(HOLD_S)})
Message = dict[str, Any]


class Heard:
    """Every text message one client received, with a way to wait for one that matches."""

    def __init__(self, client: Client) -> None:
        self.messages: list[Message] = []
        self._changed = asyncio.Event()
        self.stop = client.listen(self._heard)

    def _heard(self, message: Message) -> None:
        self.messages.append(message)
        self._changed.set()

    async def first(self, match: Callable[[Message], bool], after: int = 0, within: float = 20.0) -> Message:
        async with asyncio.timeout(within):
            while True:
                for message in self.messages[after:]:
                    if match(message):
                        return message
                self._changed.clear()
                await self._changed.wait()


def control(driver: str | None, **fields: object) -> Callable[[Message], bool]:
    return lambda m: (m.get("type") == "control" and m.get("driver") == driver
                      and all(m.get(k) == v for k, v in fields.items()))


def person_grant(frame: str, subject: str = "alice", issued: float | None = None) -> str:
    key = derive_key(TEST_SECRET.encode(), "test")
    now = time.time() if issued is None else issued
    return mint(key, sandbox="test", role="drive", now=now, frame=frame, subject=subject, ttl=600)


@asynccontextmanager
async def person(service: Service, frame: str, subject: str = "alice") -> AsyncIterator[Client]:
    """A person's client: a drive token for hello, and their own (newer) grant for each step."""
    token = service.token("drive", frame=frame, subject=subject)
    async with await Client.connect(service.base, token=token, grants=lambda _f: person_grant(frame, subject),
                                    reconnect=False) as c:
        yield c


async def button_is(client: Client, frame: str, colour: tuple[int, int, int]) -> None:
    view = await client.watch(frame)
    await view.picture_after(0, where=lambda p: near(p.pixel(*BUTTON), colour))


async def test_a_person_takes_over_holds_through_ten_agent_steps_and_hands_back_with_a_note(
        service: Service, frame: str, key: SandboxKey) -> None:
    async with await Client.connect(service.base, key=key) as agent, person(service, frame) as alice, \
            await Client.connect(service.base, token=service.token("view", frame=frame, subject="watcher")) as viewer:
        agent_heard, viewer_heard = Heard(agent), Heard(viewer)
        await viewer.watch(frame)
        await agent.watch(frame)
        await button_is(agent, frame, GREY)
        await agent.move(frame, 20, 20)
        # A view-only watcher hears who drives: the agent, by its kind, since when.
        seen = await viewer_heard.first(control("agent", kind="agent", held=False, you=False))
        assert isinstance(seen["since_us"], int) and seen["since_us"] <= time.time_ns() // 1000
        # The agent asks for help; every watcher is told the reason.
        asking = asyncio.create_task(agent.request_help(frame, "a login needs your password", timeout=120))
        asked = await viewer_heard.first(lambda m: m.get("type") == "help-requested")
        assert (asked["frame"], asked["reason"], asked["subject"]) == (frame, "a login needs your password", "agent")
        assert asked["until_us"] > time.time_ns() // 1000 + 100_000_000
        # The person takes over: every watcher hears it, the agent's own connection too.
        mark = len(agent_heard.messages)
        await alice.take_over(frame)
        taken = await viewer_heard.first(control("alice", kind="person", held=True, you=False))
        assert taken["since_us"] > seen["since_us"]
        await agent_heard.first(control("alice", kind="person", held=True, you=False), after=mark)
        # Ten freshly minted agent steps are refused while the person types.
        await alice.click(frame, *FIELD)
        for i in range(10):
            with pytest.raises(TakenOver) as refused:
                await agent.click(frame, *BUTTON)
            assert "alice" in refused.value.message and refused.value.frame == frame
            await alice.type_text(frame, "abcdefghij"[i])
        assert not asking.done()
        view = await alice.watch(frame)
        await view.settle(quiet=0.3)
        shot = png_to_rgb((await alice.screenshot(frame)).png)
        assert typed_text(shot) == "abcdefghij" and near(tuple(shot[BUTTON[1], BUTTON[0]]), GREY)
        # The person hands back with a note: the agent's request returns it, every watcher hears it.
        await alice.release(frame, "logged in, over to you")
        assert await asyncio.wait_for(asking, 20) == "logged in, over to you"
        ended = await viewer_heard.first(lambda m: m.get("type") == "help-ended")
        assert (ended["outcome"], ended["note"], ended["by"], ended["id"]) == (
            "answered", "logged in, over to you", "alice", asked["id"])
        await viewer_heard.first(control(None, kind=None, held=False, note="logged in, over to you"))
        # A stray event under a grant from before the hand-back (a viewer's token from page load) changes nothing.
        with pytest.raises(Superseded):
            await alice.click(frame, *BUTTON, grant=person_grant(frame, issued=time.time() - 60))
        metrics = service.get("/metrics", token=None)[1].decode()
        assert f'framestream_help_requests{{frame="{frame}",outcome="answered"}} 1' in metrics
        assert f'framestream_driver_changes_total{{frame="{frame}",kind="none"}} 1' in metrics
        assert f'framestream_driver_changes_total{{frame="{frame}",kind="person"}} 1' in metrics
        # The agent's next click drives again and changes the page.
        step = await agent.click(frame, *BUTTON)
        after = await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(*BUTTON), RED))
        assert after.capture_us >= step.sent_us
        # Where the agent acted goes to watchers, to be drawn over the picture.
        pointer = await viewer_heard.first(lambda m: m.get("type") == "agent-pointer" and m.get("action") == "click")
        assert (pointer["x"], pointer["y"], pointer["subject"]) == (*BUTTON, "agent")


async def test_an_idle_person_loses_the_hold_and_the_agent_drives_again(
        service: Service, frame: str, key: SandboxKey) -> None:
    async with await Client.connect(service.base, key=key) as agent, person(service, frame) as alice:
        heard = Heard(agent)
        await agent.watch(frame)
        await button_is(agent, frame, GREY)
        await alice.take_over(frame)
        held = await heard.first(control("alice", held=True))
        with pytest.raises(TakenOver):
            await agent.move(frame, 5, 5)
        # Nobody touches the page: the hold lapses HOLD_S after the person's last input, and watchers hear it.
        lapsed = await heard.first(control("alice", kind="person", held=False), within=HOLD_S + 15)
        assert lapsed["since_us"] == held["since_us"]  # the same driver, no longer holding
        step = await agent.click(frame, *BUTTON)
        await (await agent.watch(frame)).picture_after(step.sent_us, where=lambda p: near(p.pixel(*BUTTON), RED))
        await heard.first(control("agent", kind="agent"))


async def test_a_person_who_disconnects_ends_their_hold(service: Service, frame: str, key: SandboxKey) -> None:
    async with await Client.connect(service.base, key=key) as agent:
        heard = Heard(agent)
        await agent.watch(frame)
        async with person(service, frame) as alice:
            await alice.take_over(frame)
            await heard.first(control("alice", held=True))
        await heard.first(control(None, held=False))
        await agent.move(frame, 5, 5)  # accepted at once: no hold is left


async def test_a_person_who_takes_over_while_the_agents_click_waits_for_a_print_holds_the_frame_at_once(
        service: Service, key: SandboxKey) -> None:
    """Input waits for a page's print to end (Chromium drops it meanwhile: browser/print_hook.py), but outside the
    step lock: a person's take-over meanwhile is admitted at once, and the agent's waiting click is refused, not
    applied after the print. (Under the lock, the take-over waited for the print and the agent's click went in.)"""
    frame = service.create_frame(f"{service.pages}/print_long.html", width=640, height=400, dpr=1)
    try:
        async with await Client.connect(service.base, key=key) as agent, person(service, frame) as alice:
            view = await agent.watch(frame)
            await view.picture_after(0, where=lambda p: near(p.pixel(400, 300), WHITE))
            await agent.click(frame, 120, 50)  # print: answered as the print starts
            waiting = asyncio.create_task(agent.click(frame, 120, 150))  # red: waits for the print's end
            # Let the agent's click reach the service first. Nothing tells it arrived; had the take-over come first,
            # the click would be refused at once all the same, so this orders the two and cannot fail the test.
            await asyncio.sleep(0.2)
            await alice.take_over(frame)
            with pytest.raises((TakenOver, Superseded)):  # (its grant older than the person's, or as old)
                await waiting
            step = await alice.click(frame, 120, 250)  # a button that turns itself green (seen off its text)
            shown = await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(40, 270), GREEN))
            assert near(shown.pixel(400, 300), WHITE)  # the agent's red click never went in
    finally:
        service.request("DELETE", f"/frames/{frame}?purge=1")


async def test_nobody_answers_a_request_for_help_within_its_timeout(service: Service, frame: str,
                                                                    key: SandboxKey) -> None:
    async with await Client.connect(service.base, key=key) as agent, \
            await Client.connect(service.base, token=service.token("view", frame=frame)) as viewer:
        heard = Heard(viewer)
        await viewer.watch(frame)
        assert await agent.request_help(frame, "a CAPTCHA", timeout=1) is None
        ended = await heard.first(lambda m: m.get("type") == "help-ended")
        assert ended["outcome"] == "timeout" and "note" not in ended


async def test_grants_that_may_not_drive_cannot_hold_release_or_ask(service: Service, frame: str,
                                                                    key: SandboxKey) -> None:
    async with await Client.connect(service.base, key=key) as agent, person(service, frame) as alice:
        heard = Heard(agent)
        await agent.watch(frame)
        await alice.take_over(frame)
        await heard.first(control("alice", held=True))
        dkey = derive_key(TEST_SECRET.encode(), "test")
        bad_signature = forged(person_grant(frame))
        expired = mint(dkey, sandbox="test", role="drive", now=time.time() - 600, frame=frame, subject="mallory",
                       ttl=60)
        view_only = service.token("view", frame=frame, subject="mallory")
        other_frame = mint(dkey, sandbox="test", role="drive", now=time.time(), frame="other", subject="mallory",
                           ttl=60)
        step = key.step(frame)
        answers = await raw_steps(service, frame, [
            ("take-over", bad_signature, {}), ("take-over", expired, {}), ("take-over", view_only, {}),
            ("take-over", other_frame, {}), ("take-over", step, {}),
            ("release", bad_signature, {"note": "x"}), ("release", expired, {}), ("release", view_only, {}),
            ("release", forged(person_grant(frame, "bob")), {}),
            ("request-help", bad_signature, {"reason": "r"}), ("request-help", expired, {"reason": "r"}),
            ("request-help", view_only, {"reason": "r"}), ("request-help", person_grant(frame, "bob"), {"reason": "r"}),
            ("request-help", key.step(frame), {"reason": ""}), ("request-help", key.step(frame), {"reason": "r",
                                                                                                 "timeout_s": 0}),
            ("release", key.step(frame), {}),  # a valid grant, but not the driver's
        ])
        assert [a.get("code") for a in answers] == [
            "unauthorized", "expired", "forbidden", "forbidden", "forbidden",
            "unauthorized", "expired", "forbidden", "unauthorized",
            "unauthorized", "expired", "forbidden", "forbidden",
            "bad-input", "bad-input", "superseded"]
        # Nothing changed: alice still holds, and no request for help was opened.
        with pytest.raises(TakenOver):
            await agent.move(frame, 5, 5)
        assert not any(m.get("type") == "help-requested" for m in heard.messages)


async def raw_steps(service: Service, frame: str, steps: list[tuple[str, str, dict[str, object]]]) -> list[Message]:
    """Each step sent as a raw WebSocket message (seq 1, 2, ...) on a view connection; its answer, in order."""
    answers: list[Message] = []
    async with aiohttp.ClientSession() as http, http.ws_connect(service.ws_url) as ws:
        await ws.send_json({"type": "hello", "token": service.token("view", frame=frame)})
        assert (await ws.receive_json())["type"] == "welcome"
        for seq, (kind, grant, fields) in enumerate(steps, 1):
            await ws.send_str(json.dumps({"type": kind, "frame": frame, "grant": grant, "seq": seq, **fields}))
            while True:
                answer = await ws.receive_json(timeout=20)
                if answer.get("seq") == seq:
                    answers.append(answer)
                    break
    return answers
