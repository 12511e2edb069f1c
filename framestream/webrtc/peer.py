"""One peer connection carrying one frame's own H.264 pictures to one viewer connection.

The answer offers only H.264 with packetization-mode 1 and announces the stream's real profile and level
(`sdp`). RTCP PLI and FIR reach the sender's `_send_keyframe`, which on its own only sets a flag for aiortc's
encoder path (unused for packets): it is replaced here by a keyframe request for the stream the viewer takes
(connection.py), so the request goes through the frame's own coalescing (at most one IDR a second beyond the
first). RTCP REMB naming our SSRC (the receiver's estimate of the link: Chromium sends it because the answer
offers `goog-remb` and no `transport-cc`) goes to the viewer's link (`LinkMeter.reported`), which chooses
between the frame's full and light streams. The watchdog reports a peer connection that does not connect within
the ICE timeout, fails, or stays disconnected that long.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from aiortc import (
    RTCConfiguration,
    RTCIceServer,
    RTCPeerConnection,
    RTCRtpCodecParameters,
    RTCRtpSender,
    RTCSessionDescription,
)
from aiortc.rtp import RTCP_PSFB_APP, AnyRtcpPacket, RtcpPsfbPacket, RtcpRrPacket, RtcpSrPacket, unpack_remb_fci
from aiortc.sdp import candidate_from_sdp

from framestream.core.wire import IceCandidate
from framestream.fanout.outbox import Outbox
from framestream.webrtc import consent
from framestream.webrtc.ice import IceServer
from framestream.webrtc.sdp import with_profile_level_id
from framestream.webrtc.track import EncodedTrack

log = logging.getLogger(__name__)


class PeerError(Exception):
    """The offer cannot be answered (not SDP, no video, no H.264 with packetization-mode 1)."""


def _configuration(servers: tuple[IceServer, ...]) -> RTCConfiguration:
    # An explicit list, even empty: with none aiortc would ask Google's public STUN server.
    return RTCConfiguration(iceServers=[RTCIceServer(list(s.urls), s.username, s.credential) for s in servers])


def _h264_only(codecs: list[RTCRtpCodecParameters]) -> list[RTCRtpCodecParameters]:
    """The first H.264 with packetization-mode 1 the offer and aiortc share, and its RTX: the sender sends with
    the first codec of the list, and our packets are H.264 whatever else was offered first (VP8...)."""
    h264 = [c for c in codecs if c.mimeType.lower() == "video/h264"
            and str(c.parameters.get("packetization-mode")) == "1"][:1]
    rtx = [c for c in codecs if h264 and c.mimeType.lower() == "video/rtx"
           and c.parameters.get("apt") == h264[0].payloadType]
    return h264 + rtx


def remb_bitrate(packet: AnyRtcpPacket, ssrc: int) -> int | None:
    """The bits per second a REMB packet estimates for the stream `ssrc`; None for any other packet."""
    if not (isinstance(packet, RtcpPsfbPacket) and packet.fmt == RTCP_PSFB_APP):
        return None
    try:
        bitrate, ssrcs = unpack_remb_fci(packet.fci)
    except ValueError:  # another application-layer feedback than REMB
        return None
    return bitrate if ssrc in ssrcs else None


def receiver_counts(packet: AnyRtcpPacket, ssrc: int) -> tuple[int, int] | None:
    """A receiver's report (RR or SR) on the stream `ssrc`: (packets lost in all, extended highest sequence
    number received), or None."""
    if not isinstance(packet, (RtcpRrPacket, RtcpSrPacket)):
        return None
    for report in packet.reports:
        if report.ssrc == ssrc:
            return report.packets_lost, report.highest_sequence
    return None


def report_remb(sender: RTCRtpSender, on_bitrate: Callable[[int], None],
                on_loss: Callable[[int, int], None] | None = None) -> None:
    """Call `on_bitrate` with each REMB estimate the receiver sends for `sender`'s stream.

    aiortc parses REMB in the sender's `_handle_rtcp_packet` and gives it only to the sender's own encoder
    (`target_bitrate`), which packets never go through: no event, no public hook. The DTLS transport's router
    calls that method on the instance for each RTCP packet it routes to the sender (REMB by the SSRCs in its
    FCI), so it is wrapped on this instance only: aiortc's own handling (RTT, NACK, PLI/FIR) still runs, and
    nothing else of aiortc is patched. The SSRC is checked again here: the router also hands the sender any
    feedback whose media SSRC is its own. Receiver reports' counters for our stream go to `on_loss`."""
    original: Callable[[AnyRtcpPacket], Awaitable[None]] = sender._handle_rtcp_packet

    async def handle(packet: AnyRtcpPacket) -> None:
        bitrate = remb_bitrate(packet, sender._ssrc)
        if bitrate is not None:
            on_bitrate(bitrate)
        counts = receiver_counts(packet, sender._ssrc) if on_loss is not None else None
        if counts is not None and on_loss is not None:
            on_loss(*counts)
        await original(packet)

    sender._handle_rtcp_packet = handle  # type: ignore[method-assign]


class Peer:
    """Answer one offer, take trickled candidates, close once."""

    def __init__(self, frame_id: str, *, servers: tuple[IceServer, ...], ice_timeout_s: float,
                 on_keyframe_request: Callable[[], None], outbox: Outbox | None = None) -> None:
        self.frame_id = frame_id
        # Filled by the frame's feed through a Viewer, read by the track (an empty Outbox is falsy: `is None`).
        self.outbox = Outbox() if outbox is None else outbox
        self.track = EncodedTrack(self.outbox)
        self._servers = servers
        self._ice_timeout_s = ice_timeout_s
        self._on_keyframe_request = on_keyframe_request
        self._pc: RTCPeerConnection | None = None
        self._changed = asyncio.Event()
        self._described = asyncio.Event()  # the offer is set (or the peer closed): candidates may be added
        self.keyframe_requests = 0  # PLI and FIR received
        self.rembs = 0  # REMB estimates received for our stream
        self.remb_bps: int | None = None  # the last one
        self.trouble: str | None = None  # why the service closes it: failed or stalled

    @property
    def packets(self) -> int:
        return self.track.packets

    @property
    def state(self) -> str:
        return "new" if self._pc is None else self._pc.connectionState

    async def answer(self, offer: str, profile_level_id: str) -> str:
        """The SDP answer to `offer` (every server candidate in it: aiortc gathers before answering)."""
        pc = self._pc = RTCPeerConnection(_configuration(self._servers))
        pc.on("connectionstatechange", self._changed.set)
        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
        except Exception as exc:  # aiortc raises ValueError, KeyError, IndexError... for malformed SDP
            raise PeerError(f"not a usable SDP offer ({type(exc).__name__})") from None
        self._described.set()
        video = [t for t in pc.getTransceivers() if t.kind == "video"]
        if len(video) != 1 or video[0].direction not in ("recvonly", "sendrecv"):
            raise PeerError("the offer must have one video section that receives")
        # aiortc chose the answer's codecs in setRemoteDescription (preferences set now would come too late).
        video[0]._codecs = _h264_only(video[0]._codecs)
        if not video[0]._codecs:
            raise PeerError("the offer has no H.264 with packetization-mode 1")
        sender = pc.addTrack(self.track)
        sender._send_keyframe = self._keyframe_requested  # type: ignore[method-assign]
        report_remb(sender, self._remb, self.outbox.link.lost)
        consent.install(sender.transport.transport.iceGatherer._connection)  # before it connects
        try:
            await pc.setLocalDescription(await pc.createAnswer())
        except Exception as exc:  # no common codec, or an offer aiortc cannot answer
            raise PeerError(f"the offer cannot be answered: {exc or type(exc).__name__}") from None
        local = pc.localDescription
        if local is None:  # closed meanwhile (the frame was unwatched while the answer was being made)
            raise PeerError("the peer connection was closed")
        return with_profile_level_id(local.sdp, profile_level_id)

    def _keyframe_requested(self) -> None:
        self.keyframe_requests += 1
        log.debug("keyframe requested by RTCP (PLI or FIR)", extra={"frame": self.frame_id})
        self._on_keyframe_request()

    def _remb(self, bits_per_s: int) -> None:
        self.rembs += 1
        self.remb_bps = bits_per_s
        self.outbox.link.reported(bits_per_s)

    async def add_candidate(self, candidate: IceCandidate) -> None:
        """Add a trickled candidate once the offer is set (it may arrive while the answer is being made)."""
        await self._described.wait()
        if self._pc is None or self.state == "closed":
            return
        parsed = None  # an empty candidate: the end of candidates
        if candidate.candidate:
            try:
                parsed = candidate_from_sdp(candidate.candidate.removeprefix("a=").removeprefix("candidate:"))
            except (AssertionError, ValueError, IndexError) as exc:  # aiortc asserts on too few fields
                raise PeerError("not an ICE candidate") from exc
            parsed.sdpMid, parsed.sdpMLineIndex = candidate.sdp_mid, candidate.sdp_mline_index
        try:
            await self._pc.addIceCandidate(parsed)
        except Exception as exc:  # no sdpMid nor sdpMLineIndex, or the connection closing meanwhile
            raise PeerError(f"the candidate cannot be added ({type(exc).__name__})") from None

    async def wait_trouble(self) -> str | None:
        """`failed` or `stalled` once the connection is in trouble; None once closed."""
        while True:
            state = self.state
            if state == "failed":
                return "failed"
            if state == "closed":
                return None
            self._changed.clear()
            try:
                async with asyncio.timeout(None if state == "connected" else self._ice_timeout_s):
                    await self._changed.wait()
            except TimeoutError:
                return "stalled"

    async def close(self) -> None:
        self._described.set()  # a candidate still waiting gives up
        self.track.stop()
        if self._pc is not None:
            with contextlib.suppress(Exception):  # closing is best effort; a half-made connection may raise
                await self._pc.close()
            self._changed.set()
