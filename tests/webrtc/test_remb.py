"""The receiver's REMB (RTCP payload-specific feedback, application layer) reaches the viewer's link meter only
when it names our stream's SSRC: packets built and parsed as on the wire, routed as aiortc's DTLS transport
routes them, handled by a real `RTCRtpSender` with the peer's hook."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from aiortc import RTCRtpSender
from aiortc.rtcdtlstransport import RtpRouter
from aiortc.rtp import (
    RTCP_PSFB_APP,
    RTCP_PSFB_PLI,
    AnyRtcpPacket,
    RtcpPacket,
    RtcpPsfbPacket,
    pack_remb_fci,
)

from framestream.fanout.link import LinkMeter, StreamChoice
from framestream.fanout.outbox import Outbox
from framestream.webrtc.peer import remb_bitrate, report_remb
from framestream.webrtc.track import EncodedTrack

RECEIVER_SSRC = 0x1234  # the RTCP sender: Chromium's receiver
OTHER_SSRC = 0xBEEF  # a stream that is not ours


def on_the_wire(packet: RtcpPsfbPacket) -> AnyRtcpPacket:
    """The packet as aiortc parses it from the bytes Chromium would send."""
    parsed = RtcpPacket.parse(bytes(packet))
    assert len(parsed) == 1
    return parsed[0]


def remb(bitrate: int, ssrcs: list[int]) -> AnyRtcpPacket:
    # media_ssrc is always 0 in REMB: the streams it is about are in its FCI
    return on_the_wire(RtcpPsfbPacket(fmt=RTCP_PSFB_APP, ssrc=RECEIVER_SSRC, media_ssrc=0,
                                      fci=pack_remb_fci(bitrate, ssrcs)))


def hooked_sender() -> tuple[RTCRtpSender, Outbox, list[int]]:
    outbox = Outbox()
    transport: Any = SimpleNamespace(state="new")  # the sender only checks that its transport is not closed
    sender = RTCRtpSender(EncodedTrack(outbox), transport)
    seen: list[int] = []

    def reported(bits_per_s: int) -> None:
        seen.append(bits_per_s)
        outbox.link.reported(bits_per_s)

    report_remb(sender, reported)
    return sender, outbox, seen


async def route(router: RtpRouter, packet: AnyRtcpPacket) -> None:
    """What aiortc's DTLS transport does with an incoming RTCP packet (`_handle_rtcp_data`)."""
    for recipient in router.route_rtcp(packet):
        await recipient._handle_rtcp_packet(packet)


async def test_a_remb_naming_our_ssrc_sets_the_link_rate() -> None:
    sender, outbox, seen = hooked_sender()
    router = RtpRouter()
    router.register_sender(sender, sender._ssrc)
    assert outbox.link.rate is None and not outbox.link.reporting
    await route(router, remb(800_000, [OTHER_SSRC, sender._ssrc]))
    assert seen == [800_000]
    assert outbox.link.reporting and outbox.link.rate == 100_000  # bytes per second


async def test_a_remb_for_other_streams_is_ignored() -> None:
    sender, outbox, seen = hooked_sender()
    router = RtpRouter()
    router.register_sender(sender, sender._ssrc)
    await route(router, remb(800_000, [OTHER_SSRC]))  # the router hands it to nobody
    # Handed to the sender directly anyway (the router also routes by media SSRC): still not ours.
    await sender._handle_rtcp_packet(remb(500_000, [OTHER_SSRC]))
    assert seen == [] and outbox.link.rate is None and not outbox.link.reporting


def test_only_remb_is_read_as_an_estimate() -> None:
    ssrc = 0xCAFE
    pli = on_the_wire(RtcpPsfbPacket(fmt=RTCP_PSFB_PLI, ssrc=RECEIVER_SSRC, media_ssrc=ssrc))
    other_app = on_the_wire(RtcpPsfbPacket(fmt=RTCP_PSFB_APP, ssrc=RECEIVER_SSRC, media_ssrc=0,
                                           fci=b"GOOG" + bytes(8)))
    assert remb_bitrate(pli, ssrc) is None
    assert remb_bitrate(other_app, ssrc) is None
    assert remb_bitrate(remb(1_000_000, [ssrc]), ssrc) == 1_000_000  # exactly representable (mantissa 18 bits)
    assert remb_bitrate(remb(1_000_000, [ssrc + 1]), ssrc) is None


async def test_aiortcs_own_handling_still_runs() -> None:
    sender, _outbox, _seen = hooked_sender()
    keyframes: list[bool] = []
    sender._send_keyframe = lambda: keyframes.append(True)  # type: ignore[method-assign]
    await sender._handle_rtcp_packet(on_the_wire(RtcpPsfbPacket(fmt=RTCP_PSFB_PLI, ssrc=RECEIVER_SSRC,
                                                                media_ssrc=sender._ssrc)))
    assert keyframes == [True]


def test_an_estimate_still_ramping_up_does_not_make_the_viewer_slow() -> None:
    """Chromium's first REMB comes about 5 s after the first packets, at what arrived so far (a bursty stream's
    average), and then rises a few % a second while nothing is lost. Measured on an unlimited loopback link
    (scroll_fast.html, 1280x800 dpr 2): 529 kbit/s at first, 1203 kbit/s 33 s later, never lower, no packet
    lost; the frame's deltas were about 0.9 Mbit/s. Such a viewer took the light stream after 1 s, and its tries
    of the full stream failed the same way (on the light stream the estimate stays near 1.5 times what arrives),
    so it stayed there: 326 of 342 pictures presented at CSS size (benchmarks/results/webrtc-20261201T064304Z.json)."""
    now = [0.0]
    link, choice = LinkMeter(lambda: now[0]), StreamChoice(lambda: now[0])
    estimate = 529_000.0
    for tick in range(30 * 20):  # 20 s at 30 pictures a second, 3.7 KB each: 0.89 Mbit/s
        now[0] = tick / 30
        choice.deltas.add(3_700)
        if tick % 6 == 0:  # five REMBs a second, as counted
            link.reported(estimate)
            estimate *= 1.025 ** (6 / 30)
        assert not choice.update(link.rate, link.reporting, link.delivered, link.falling, link.lossy), \
            f"slow after {now[0]:.1f} s"
