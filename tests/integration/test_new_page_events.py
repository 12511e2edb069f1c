"""A dialog a new tab's page opens as it loads is heard, its page named, and its answer lets the page go on.

tests/pages/opens_alert.html is one link to tests/pages/tab_alert.html in a new tab, whose script says `alert()`
before the page paints, and turns it green once answered. The new page runs while the service still sets it up
(its window is being made full screen, browser/page_setup.py): events of a page not yet listed are not heard."""

from __future__ import annotations

import pytest

from framestream.client import Client, SandboxKey
from tests.client.agent_page import near
from tests.fixtures import service_fixture
from tests.support import Service

pytestmark = pytest.mark.integration

service = service_fixture("opens_alert.html@640x400")

RED, GREEN = (200, 40, 40), (30, 180, 60)


async def test_a_dialog_a_new_tab_opens_as_it_loads_is_heard_and_answered(service: Service, key: SandboxKey,
                                                                           ) -> None:
    [frame] = service.frame_ids()
    async with await Client.connect(service.base, key=key) as agent:
        view = await agent.watch(frame)
        await view.wait_for(lambda v: v.state is not None and len(v.state.pages) == 1, 15)
        await agent.click(frame, 320, 200)
        await view.wait_for(lambda v: bool(v.dialogs), 15)
        [dialog] = view.dialogs.values()
        assert (dialog["kind"], dialog["message"]) == ("alert", "welcome back"), dialog
        await view.wait_for(lambda v: v.state is not None and len(v.state.pages) == 2
                            and all(p["url"] for p in v.state.pages), 15)
        assert view.state is not None
        new = next(p for p in view.state.pages if p["id"] == dialog["page"])
        assert new["active"] and new["url"].endswith("/tab_alert.html"), view.state.pages
        await agent.answer_dialog(frame, str(dialog["id"]), True)
        await view.wait_for(lambda v: v.latest is not None and near(v.latest.rgb[100, 100], GREEN), 15)
        assert not view.dialogs
