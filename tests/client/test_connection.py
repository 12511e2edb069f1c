"""framestream.client's connection: it reconnects after the service restarts and re-watches, a step begun while it
is away is sent once it is back, and closing it leaves no task and no socket behind."""

from __future__ import annotations

import asyncio
import time

import pytest

from framestream.client import Client, ConnectionLost, SandboxKey, steps
from tests.client.agent_page import BUTTON, GREY, RED, near
from tests.fixtures import service_fixture
from tests.silent_path import SilentPath
from tests.support import Service, open_sockets

pytestmark = pytest.mark.integration

service = service_fixture("agent.html@640x400")


async def test_reconnects_after_the_service_restarts_and_watches_again(service: Service, key: SandboxKey) -> None:
    [frame] = service.frame_ids()
    async with await Client.connect(service.base, key=key, backoff=(0.05, 0.5)) as client:
        view = await client.watch(frame)
        await view.picture_after(0, where=lambda p: near(p.pixel(*BUTTON, dpr=2), GREY))
        await asyncio.to_thread(service.stop)
        await view.wait_for(lambda v: v.config is None)  # the socket went
        # A step begun now waits for the reconnect, not fails: it was never sent, so sending it later is safe.
        click = asyncio.create_task(client.send(frame, steps.click(*BUTTON), timeout=120))
        restarted_us = time.time_ns() // 1000  # every picture of the new service is captured after this
        await asyncio.to_thread(service.start)
        step = await click
        assert client.connection.connects == 2
        assert step.sent_us >= restarted_us, "sent (and its grant minted) once the socket was back"
        await view.wait_for(lambda v: v.config is not None, timeout=60)
        # Pictures flow again on the same view, and the step's picture shows it applied.
        await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(*BUTTON, dpr=2), RED), timeout=60)


async def test_a_step_waiting_for_the_reconnect_fails_when_the_client_closes_or_gives_up(
        service: Service, key: SandboxKey) -> None:
    [frame] = service.frame_ids()
    try:
        client = await Client.connect(service.base, key=key, backoff=(0.05, 0.5))
        view = await client.watch(frame)
        await asyncio.to_thread(service.stop)
        await view.wait_for(lambda v: v.config is None)
        waiting = asyncio.create_task(client.click(frame, *BUTTON))
        await client.close()
        with pytest.raises(ConnectionLost):
            await waiting
        # Without reconnecting, a step after the socket went fails at once.
        await asyncio.to_thread(service.start)
        async with await Client.connect(service.base, key=key, reconnect=False) as once:
            await once.watch(frame)
            await asyncio.to_thread(service.stop)
            with pytest.raises(ConnectionLost):
                await once.connection.until_connected(60)  # given up once the socket closed
            with pytest.raises(ConnectionLost):
                await once.click(frame, *BUTTON)
    finally:
        if service.proc is None or service.proc.poll() is not None:
            await asyncio.to_thread(service.start)


async def test_closing_leaves_no_task_and_no_socket(service: Service, key: SandboxKey) -> None:
    [frame] = service.frame_ids()
    tasks_before = asyncio.all_tasks()
    sockets_before = open_sockets()
    client = await Client.connect(service.base, key=key)
    view = await client.watch(frame)
    step = await client.click(frame, *BUTTON)
    await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(*BUTTON, dpr=2), RED))
    await view.settle(quiet=0.2)
    await client.screenshot(frame, css=True)
    assert len(open_sockets()) > len(sockets_before)  # the socket is open while the client is
    await client.close()
    assert asyncio.all_tasks() == tasks_before
    assert open_sockets() <= sockets_before, sorted(open_sockets() - sockets_before)


async def test_a_connection_whose_path_died_silently_is_given_up_and_the_view_catches_up(
        service: Service, key: SandboxKey) -> None:
    """The path to the service stops carrying anything without a close (tests/silent_path.py): nothing tells the
    client, so its heartbeat must. It gives the socket up, reconnects over the path that came back, watches again,
    and the view shows the page as it is now: a click made meanwhile by someone else."""
    [frame] = service.frame_ids()
    async with SilentPath(service.port) as path, \
            await Client.connect(path.base, key=key, backoff=(0.05, 0.5), heartbeat=2.0) as client, \
            await Client.connect(service.base, key=key) as other:
        view = await client.watch(frame)
        await view.picture_after(0, where=lambda p: near(p.pixel(*BUTTON, dpr=2), GREY))
        assert path.cut() >= 1
        step = await other.click(frame, *BUTTON)  # the page changes while the path is dead
        await view.wait_for(lambda v: v.config is None, timeout=30)  # given up: no answer to its ping
        await client.connection.wait_connected()
        assert client.connection.connects >= 2
        await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(*BUTTON, dpr=2), RED), timeout=60)
