"""framestream.client against the real service (Xvfb, Chromium, libx264): an agent's steps and what it sees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from framestream.client import Client, Picture, SandboxKey, Superseded, TakenOver, UnknownFrame, png_to_rgb
from tests.client.agent_page import BUTTON, FIELD, GREY, MARKS, RED, near, typed_text
from tests.fixtures import service_fixture
from tests.support import Service

pytestmark = pytest.mark.integration

service = service_fixture(scope="module")


async def test_a_click_turns_the_button_red_in_the_first_picture_after_the_step(client: Client, frame: str) -> None:
    view = await client.watch(frame)
    await view.picture_after(0, where=lambda p: near(p.pixel(*BUTTON), GREY))  # the page is painted
    step = await client.click(frame, *BUTTON)
    assert step.acked_us >= step.sent_us
    # The first picture that shows the change: the click's effect, in order, as the page painted it.
    after = await view.picture_after(step.sent_us, where=lambda p: not near(p.pixel(*BUTTON), GREY))
    assert near(after.pixel(*BUTTON), RED), after.pixel(*BUTTON)
    assert after.capture_us >= step.sent_us
    assert (after.width, after.height) == (640, 400)
    settled = await view.settle(quiet=0.3)
    assert near(settled.pixel(*BUTTON), RED)


async def test_typed_text_appears(client: Client, frame: str) -> None:
    view = await client.watch(frame)
    await view.picture_after(0, where=lambda p: near(p.pixel(*BUTTON), GREY))
    await client.click(frame, *FIELD)
    await client.type_text(frame, "héllo, agent")
    step = await client.press(frame, "Shift+1")
    await view.picture_after(step.sent_us)  # the page repainted (a busy machine may take a while)
    await view.settle(quiet=0.3)
    shot = await client.screenshot(frame)
    assert typed_text(png_to_rgb(shot.png)) == "héllo, agent!"
    await client.press(frame, "Control+A")
    step = await client.press(frame, "Backspace")
    await view.picture_after(step.sent_us)
    await view.settle(quiet=0.3)
    assert typed_text(png_to_rgb((await client.screenshot(frame)).png)) == ""


async def test_a_person_who_takes_over_makes_the_agents_next_step_fail_with_taken_over(
        service: Service, frame: str, key: SandboxKey) -> None:
    # The agent's two step grants are minted before the person's: the person's grant is the newer one.
    agent_grants = iter([key.step(frame), key.step(frame)])
    async with await Client.connect(service.base, key=key, grants=lambda _frame: next(agent_grants)) as agent, \
            await Client.connect(service.base, token=service.token("drive", frame=frame, subject="alice"),
                                 grants=service.token("drive", frame=frame, subject="alice")) as person:
        view = await agent.watch(frame)
        await agent.move(frame, 10, 10)
        await view.wait_for(lambda v: v.state is not None and v.state.driver == "agent")
        heard: list[dict[str, object]] = []
        stop = agent.listen(heard.append)
        await person.click(frame, *BUTTON)
        await view.wait_for(lambda v: v.state is not None and v.state.driver == "alice")
        await view.wait_for(lambda v: any(m.get("type") == "control" and m.get("driver") == "alice"
                                          and m.get("kind") == "person" and m.get("held") is True
                                          and m.get("you") is False for m in heard))
        stop()
        with pytest.raises(TakenOver) as refused:
            await agent.click(frame, 300, 300)
        assert refused.value.code == "taken-over" and refused.value.frame == frame
        assert isinstance(refused.value, Superseded)  # code written for superseded steps handles it too
        # The connection goes on: the agent still sees the person's click.
        await view.picture_after(0, where=lambda p: near(p.pixel(*BUTTON), RED))


async def test_unknown_frame_is_a_typed_error(client: Client) -> None:
    with pytest.raises(UnknownFrame):
        await client.watch("no-such-frame")
    with pytest.raises(UnknownFrame):
        await client.screenshot("no-such-frame")
    listed = [f.id for f in await client.list_frames()]
    assert "no-such-frame" not in listed


async def test_the_screenshot_at_css_size_of_a_dpr_2_frame(client: Client, service: Service) -> None:
    info = await client.create_frame(f"{service.pages}/agent.html", 640, 400, dpr=2)
    try:
        view = await client.watch(info.id)
        (x, y), blue = next(iter(MARKS.items()))
        picture = await view.picture_after(0, where=lambda p: near(p.pixel(x, y, dpr=2), blue))  # painted
        assert (picture.width, picture.height) == (1280, 800)
        listed = (await client.frame_info(info.id))
        assert (listed.encoded_width, listed.encoded_height, listed.message) == (1280, 800, None), listed
        await view.settle(quiet=0.3)
        shot = await client.screenshot(info.id, css=True)
        assert (shot.width, shot.height) == (640, 400)
        rgb = png_to_rgb(shot.png)
        for (x, y), colour in MARKS.items():
            assert near(rgb[y, x], colour), (x, y, rgb[y, x])
    finally:
        await client.delete_frame(info.id, purge=True)


async def test_a_resized_frames_view_decodes_the_new_size_and_the_page_keeps_its_state(client: Client,
                                                                                         service: Service) -> None:
    """tests/pages/resizable.html: corners of the viewport in four colours, a button a click turns green."""
    info = await client.create_frame(f"{service.pages}/resizable.html", 640, 400, dpr=1)
    green = (30, 180, 60)
    try:
        view = await client.watch(info.id)
        await view.picture_after(0, where=lambda p: near(p.pixel(634, 6), green))  # painted
        step = await client.click(info.id, 100, 80)
        await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(100, 80), green))
        resized = await client.resize_frame(info.id, 480, 300, dpr=1)
        assert (resized.width, resized.height, resized.dpr) == (480, 300, 1)
        assert (resized.encoded_width, resized.encoded_height) == (480, 300)
        # Returned once the view has the new size's config (the HTTP answer comes before the socket brings it).
        assert view.config is not None and (view.config.width, view.config.height) == (480, 300), view.config
        picture = await view.picture_after(step.sent_us, where=lambda p: (p.width, p.height) == (480, 300))
        assert view.config is not None and (view.config.css_width, view.config.css_height) == (480, 300)
        assert near(picture.pixel(474, 6), green) and near(picture.pixel(474, 294), (240, 200, 0))
        assert near(picture.pixel(100, 80), green), "in place: the click's green stays"
        assert (await client.frame_info(info.id)).width == 480
    finally:
        await client.delete_frame(info.id, purge=True)


async def test_an_agents_click_opens_a_date_fields_calendar_and_picks_a_day(client: Client, service: Service) -> None:
    """The calendar button of a date field acts only once hovered: the client's click moves there first, as a
    person's hand does (a bare press opened nothing)."""
    info = await client.create_frame(f"{service.pages}/tab_more.html", 640, 400, dpr=1)
    try:
        view = await client.watch(info.id)
        grey = (128, 128, 128)
        before = await view.picture_after(0, where=lambda p: near(p.pixel(320, 360), grey))  # painted
        step = await client.click(info.id, 203, 28)  # the date field's calendar button
        below = (slice(50, 290), slice(10, 330))  # where the calendar opens, under the field

        def calendar(picture: Picture) -> bool:
            # Drawn, its grid and border differ in about 4,600 pixels; while it fades in, in 50,000.
            changed = np.abs(picture.rgb[below].astype(int) - before.rgb[below].astype(int)) > 24
            return int(changed.any(axis=2).sum()) > 2000

        await view.picture_after(step.sent_us, where=calendar)
        # Its grid is read once it has faded in: the old threshold (5,000) was met only by pictures of the fade, which
        # may show it in part, and a day read from one missed the grid on a busy machine.
        shown = await view.settle()
        assert calendar(shown)
        rows, columns = np.nonzero((np.abs(shown.rgb[below].astype(int) -
                                           before.rgb[below].astype(int)) > 24).any(axis=2))
        # A day in the middle of the month's grid.
        day = (int(columns.min() + columns.max()) // 2 + 10, int(rows.min() + rows.max()) // 2 + 50)
        picked = await client.click(info.id, *day)
        await view.picture_after(picked.sent_us, where=lambda p: near(p.pixel(320, 360), (40, 60, 220)))
    finally:
        await client.delete_frame(info.id, purge=True)


async def test_an_agents_drag_moves_a_draggable_into_its_drop_zone(client: Client, service: Service) -> None:
    """HTML5 drag and drop (`draggable`): Chromium starts a page's drag only from moves that name the held button,
    and the client's drag says `buttons` alone, as the contract lets it."""
    info = await client.create_frame(f"{service.pages}/drag_drop.html", 640, 400, dpr=1)
    try:
        view = await client.watch(info.id)
        await view.picture_after(0, where=lambda p: near(p.pixel(320, 360), (128, 128, 128)))  # painted
        step = await client.drag(info.id, 90, 70, 400, 140)
        dropped = await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(320, 360), (30, 180, 60)))
        assert near(dropped.pixel(360, 80), (220, 30, 30)), dropped.pixel(360, 80)  # the item, in the zone
        assert near(dropped.pixel(90, 70), (255, 255, 255)), dropped.pixel(90, 70)  # and gone from where it was
    finally:
        await client.delete_frame(info.id, purge=True)


async def test_a_keys_client_hears_the_file_chooser_its_click_opened_and_answers_it(
        client: Client, service: Service, tmp_path: Path) -> None:
    """A client made with a key says hello as one who may drive, so it hears file choosers (told only to such
    connections) without a token of its own: its click opens tests/pages/files.html's chooser, and the file it
    picks reaches the page, whose marker shows its first bytes (one file, 200, 10)."""
    picked = tmp_path / "picked.bin"
    picked.write_bytes(bytes([200, 10, 0]))
    info = await client.create_frame(f"{service.pages}/files.html", 640, 400, dpr=1)
    try:
        view = await client.watch(info.id)
        await view.picture_after(0, where=lambda p: near(p.pixel(320, 360), (128, 128, 128)))  # painted
        await client.click(info.id, 100, 30)  # the page's <input type=file>
        await view.wait_for(lambda v: bool(v.file_choosers))
        [chooser] = list(view.file_choosers)
        assert await client.choose_files(info.id, chooser, [picked]) == ["picked.bin"]
        await view.picture_after(0, where=lambda p: near(p.pixel(320, 360), (60, 200, 10)))
    finally:
        await client.delete_frame(info.id, purge=True)
