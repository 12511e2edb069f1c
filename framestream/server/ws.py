"""The viewer WebSocket in aiohttp: reads messages into a `ViewerSession` and carries out what it returns.

Everything the protocol decides (hello, slots, limits, step order, every text sent) is in server/session.py;
this module only does the I/O. A connection owns its tasks: this reader (the handler itself), a writer
draining its `Outbox`, the bring-up of each frame it starts watching and the input step being applied. All of
them end when the socket closes or the service shuts down (close code 1001).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from aiohttp import WSMsgType, web

from framestream.core.errors import CapacityError, FrameGone, ProtocolError, protocol_error
from framestream.core.ratelimit import LatestEvery
from framestream.core.wire import CLOSE_GOING_AWAY, CLOSE_TOO_MANY, IceCandidate, Input, error_message
from framestream.fanout.feed import Outbox, Viewer
from framestream.frames.events import FrameEvent, StateChanged
from framestream.frames.frame import Frame
from framestream.server.context import ServiceContext
from framestream.server.drain import timed_send, writable
from framestream.server.inputs import apply_step
from framestream.server.send_at_once import AtOnce
from framestream.server.session import (
    Action,
    AddIceCandidate,
    ApplyStep,
    BringUp,
    Close,
    Phase,
    RequestKeyframe,
    Send,
    StartWatching,
    Step,
    StopWatching,
    ViewerSession,
    config_text,
    state_key,
)
from framestream.tasks import ended
from framestream.webrtc.connection import ConnectionPeers

log = logging.getLogger(__name__)

STATE_INTERVAL_S = 0.05  # a frame's `frame-state` to one connection at most 20 times a second, the newest


class ViewerConnection:
    def __init__(self, ctx: ServiceContext, ws: web.WebSocketResponse, peer: str | None = None) -> None:
        self.ctx = ctx
        self.ws = ws
        self.opened = time.monotonic()
        self.outbox = Outbox(max_text_bytes=ctx.settings.max_queued_text_bytes, on_overflow=self._overflowed)
        self.session: ViewerSession[Frame] = ViewerSession(
            ctx.settings, verify=ctx.verify, lookup=ctx.manager.get, now=self.opened,
            number=next(ctx.connection_numbers), peer=peer, admit=lambda: ctx.admission.welcome(self),
            wall_offset=time.time() - self.opened,
        )
        self.viewers: dict[str, Viewer] = {}  # what this connection added to each frame it watches
        self.peers = ConnectionPeers(ctx.settings, ctx.peers, self.session.number)  # its WebRTC peers
        self._tasks: set[asyncio.Task[None]] = set()
        self._states = LatestEvery(STATE_INTERVAL_S)  # frame-states held to be sent at most this often
        self._states_timer: asyncio.TimerHandle | None = None
        self.transport: asyncio.BaseTransport | None = None  # the socket under `ws`, for the writer's drain waits
        self._at_once = AtOnce(None, lambda: True, lambda: None)  # writes nothing until `start_sending`
        self.closing: asyncio.Task[None] | None = None  # a close with 4429 started from outside (`_close_soon`)

    async def run(self) -> None:
        writer = asyncio.create_task(self._write(), name="ws-writer")
        try:
            await self._read()
        finally:
            await self._perform(self.session.connection_lost())
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for frame in list(self.ctx.manager.frames.values()):  # a person's hold and a request end with it
                await frame.driving.connection_gone(self.session.number)
            self._stop_states()
            self.outbox.close()
            await ended(writer)
            if self.closing is not None:
                # Returning ends the connection: its close frame would be lost behind what the peer has not read
                # yet, so the peer gets its CLOSE_WAIT_S to take it first.
                await asyncio.wait({self.closing})

    async def close(self, code: int, message: str) -> None:
        self._stop_states()
        self.outbox.close()
        await self.ws.close(code=code, message=message.encode()[:120])

    # -- reading -----------------------------------------------------------------------------------------

    async def _read(self) -> None:
        while not self.session.closed:
            deadline = self.session.deadline
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:  # (aiohttp reads a timeout of 0 as none at all)
                await self._perform(self.session.check_time(time.monotonic()))
                continue
            try:
                msg = await self.ws.receive(timeout=timeout)
            except TimeoutError:
                await self._perform(self.session.check_time(time.monotonic()))
                continue
            if msg.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                break  # closed by the peer, by us (shutdown) or by an error
            await self._perform(self.session.receive(msg.data, time.monotonic()))
        if self.session.claims is not None:
            log.info("viewer left after %.0f s", time.monotonic() - self.opened, extra={"conn": self.session.number})

    # -- carrying out the session's actions ----------------------------------------------------------------

    async def _perform(self, actions: list[Action[Frame]]) -> None:
        for action in actions:
            if isinstance(action, Send):
                self._push(action.text, action.key)
            elif isinstance(action, Close):
                await close_within(self, action.code, action.reason)
            elif isinstance(action, StartWatching):
                self._start_watching(action.frame, action.slot, action.configured, action.offer, action.video)
            elif isinstance(action, StopWatching):
                self._states.forget(state_key(action.frame.id))
                viewer = self.viewers.pop(action.frame.id, None)
                if viewer is not None:
                    action.frame.remove_viewer(viewer)
                await self.peers.stop(action.frame.id)
            elif isinstance(action, AddIceCandidate):
                self._spawn(self._add_candidate(action.frame, action.candidate), f"ice-{action.frame.id}")
            elif isinstance(action, RequestKeyframe):
                viewer = self.viewers.get(action.frame.id)
                if viewer is not None and viewer.light:  # the keyframe of the stream this viewer takes
                    action.frame.request_light_keyframe()
                else:
                    action.frame.request_keyframe()
            elif isinstance(action, BringUp):
                self._spawn(self._bring_up(action.frame), f"watch-{action.frame.id}")
            elif isinstance(action, ApplyStep):
                self._spawn(self._apply(action.frame, action.message), f"input-{action.frame.id}")

    def _start_watching(self, frame: Frame, slot: int, configured: bool, offer: str | None, video: bool) -> None:
        # Over WebRTC the pictures go to the peer's track (video only: such a viewer never takes patches).
        outbox = self.outbox if offer is None else self.peers.create(frame)
        viewer = Viewer(
            frame_id=frame.id,
            slot=slot,
            outbox=outbox,
            send_config=lambda v: self.outbox.push_config(config_text(frame, v.slot, v.light, v.outbox.link.rate)),
            on_event=self._on_event,
            configured=configured,
            patches=offer is None and "patches" in self.session.features,
            copies=offer is None and {"patches", "copies"} <= set(self.session.features),
        )
        viewer.choice.expect_keyframes(frame.size.width * frame.size.height)
        self.viewers[frame.id] = viewer
        frame.add_viewer(viewer, video=video)
        if offer is not None:
            self._spawn(self._run_peer(frame, offer), f"webrtc-{frame.id}")

    async def _run_peer(self, frame: Frame, offer: str) -> None:
        peer = self.peers.current(frame.id)
        ended = await self.peers.run(frame, frame.feed.codec, offer, self.outbox.push_text)
        if ended is not None and self.peers.current(frame.id) is peer:  # not replaced by a newer offer since
            await self._perform(self.session.peer_ended(frame, ended))

    async def _add_candidate(self, frame: Frame, candidate: IceCandidate) -> None:
        error = await self.peers.add_candidate(frame.id, candidate)
        if error is not None:
            self.outbox.push_text(error_message(error.code, error.message, frame.id))

    def _on_event(self, event: FrameEvent) -> None:
        text = self.session.event_text(event)
        if text is not None:
            self._push(text, state_key(event.frame_id) if isinstance(event, StateChanged) else None)

    def _push(self, text: str, key: str | None) -> None:
        """A text to the outbox; a frame's `frame-state` (keyed) at most every STATE_INTERVAL_S, the newest."""
        if key is None:
            self.outbox.push_text(text)
            return
        now = asyncio.get_running_loop().time()
        if (ready := self._states.offer(key, text, now)) is not None:
            self.outbox.push_text(ready, key)
        self._arm_states()

    def _arm_states(self) -> None:
        when = self._states.next_due()
        if when is not None and self._states_timer is None and not self.outbox.closed:
            self._states_timer = asyncio.get_running_loop().call_at(when, self._release_states)

    def _release_states(self) -> None:
        self._states_timer = None
        for key, text in self._states.due(asyncio.get_running_loop().time()):
            self.outbox.push_text(text, key)
        self._arm_states()

    def _stop_states(self) -> None:
        if self._states_timer is not None:
            self._states_timer.cancel()
            self._states_timer = None

    def _overflowed(self) -> None:
        """The outbox gave up: the client does not read what it is sent. Closed with 4429."""
        limit = self.ctx.settings.max_queued_text_bytes
        log.info("closed: the client does not read (over %d bytes of messages queued)", limit,
                 extra={"conn": self.session.number, "code": CLOSE_TOO_MANY})
        _close_soon(self, f"not reading: over {limit} bytes of messages queued")

    async def _bring_up(self, frame: Frame) -> None:
        try:
            await frame.ensure_running()
        except (CapacityError, FrameGone) as exc:
            await self._perform(self.session.bring_up_failed(frame, protocol_error(exc, frame=frame.id)))

    async def _apply(self, frame: Frame, message: Step) -> None:
        try:
            step = message.events if isinstance(message, Input) else message
            applied = await apply_step(self.ctx, frame, message.grant, message.seq, step,
                                       presenter=self.session.presenter, notify=self._requester_event)
        except ProtocolError as exc:
            done = self.session.step_done(exc)
        except Exception as exc:  # a bug: say so to the client and go on with its next step
            log.exception("input step failed", extra={"conn": self.session.number, "frame": frame.id})
            done = self.session.step_done(ProtocolError("internal", f"input could not be applied: "
                                                                    f"{type(exc).__name__}"))
        else:
            done = self.session.step_done(None, request=applied.request)
        await self._perform(done)

    def _requester_event(self, event: FrameEvent) -> None:
        for action in self.session.requester_event(event):
            if isinstance(action, Send):
                self.outbox.push_text(action.text)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- writing -----------------------------------------------------------------------------------------

    def start_sending(self, transport: asyncio.BaseTransport | None) -> None:
        """Write to `transport` (the socket under `ws`): messages that need no wait at once, the rest in order by
        the writer task (`run`)."""
        self.transport = transport
        self._at_once = AtOnce(transport, lambda: self.ws.closed, lambda: self.outbox.link.rate)
        self.outbox.send_at_once = self._at_once

    async def _write(self) -> None:
        queue = self._at_once.queue
        try:
            while True:
                item = await self.outbox.next()
                if item is None:
                    return
                send = self.ws.send_bytes(item) if isinstance(item, bytes) else self.ws.send_str(item)
                # Until it has (nearly) reached the viewer: the queue stays in the outbox (where a slow viewer
                # can skip) and the time it took measures this connection's link.
                delivered, busy, held = await timed_send(queue, self.outbox.link.rate, len(item), send)
                self.outbox.sent(delivered, busy, held=held)
        except (ConnectionError, RuntimeError):
            pass  # the peer went away; the reader sees it too and cleans up


async def handle_ws(request: web.Request) -> web.StreamResponse:
    ctx: ServiceContext = request.app["ctx"]
    origins = ctx.settings.allowed_origins
    origin = request.headers.get("Origin")
    if origins and origin is not None and origin not in origins:
        raise web.HTTPForbidden(text='{"error":"forbidden","message":"origin not allowed"}',
                                content_type="application/json")
    # aiohttp closes with 1009 past max_msg_size; leave room so our parser answers a clear `bad-message` for
    # anything up to 4x the limit and only truly huge messages end the connection.
    ws = web.WebSocketResponse(max_msg_size=4 * ctx.settings.max_message_bytes, heartbeat=30.0, compress=False)
    await ws.prepare(request)
    if ctx.manager.closing:
        # The port stopped listening, but an HTTP connection kept alive from before (Node's fetch and WebSocket
        # share one pool) can still ask: welcomed, a reconnecting client would stay on a service about to exit.
        await ws.close(code=CLOSE_GOING_AWAY, message=b"shutting down")
        return ws
    conn = ViewerConnection(ctx, ws, request.remote)
    conn.start_sending(request.transport)
    # Only welcomed connections count against max_connections (the session asks at hello); one still
    # waiting for its hello makes the oldest waiting one (from its address, or at all) go when at a cap.
    for old in ctx.admission.arrive(conn, request.remote):
        ctx.admission.leave(old)
        log.debug("closing a connection that waited for hello", extra={"conn": old.session.number})
        _close_soon(old, "too many connections waiting for hello")
    ctx.connections.add(conn)
    try:
        await conn.run()
    finally:
        ctx.connections.discard(conn)
        ctx.admission.leave(conn)
        ctx.bytes_sent_closed += conn.outbox.bytes_sent
    return ws


_closing: set[asyncio.Task[None]] = set()  # closes started for connections displaced by newer ones


CLOSE_WAIT_S = 5.0  # a client that does not read may never take the close frame: then the socket is dropped


def _close_soon(conn: ViewerConnection, reason: str) -> None:
    """Close `conn` with 4429 from outside its own tasks (which its end cancels)."""
    conn.session.phase = Phase.CLOSED  # nothing it sends now is taken
    task = asyncio.create_task(close_within(conn, CLOSE_TOO_MANY, reason), name="ws-close-4429")
    conn.closing = task
    _closing.add(task)
    task.add_done_callback(_closing.discard)


async def close_within(conn: ViewerConnection, code: int, reason: str) -> None:
    """Close `conn` with `code`; a peer that does not take the close frame within CLOSE_WAIT_S is dropped."""
    try:
        async with asyncio.timeout(CLOSE_WAIT_S):
            await conn.close(code, reason)
    except (TimeoutError, ConnectionError, RuntimeError):
        if (transport := writable(conn.transport)) is not None:
            transport.abort()


async def close_all(ctx: ServiceContext) -> None:
    await asyncio.gather(*(c.close(CLOSE_GOING_AWAY, "shutting down") for c in list(ctx.connections)),
                         return_exceptions=True)
