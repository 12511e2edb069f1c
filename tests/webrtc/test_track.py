"""The track hands aiortc the frame's own access units, stamped with their capture time, reports each as sent once
aiortc asks for the next, and never hands it a probe's padding."""

from __future__ import annotations

import fractions

from framestream.core.wire import FLAG_KEYFRAME, pack_padding, pack_video_header
from framestream.fanout.outbox import Outbox
from framestream.webrtc.track import EncodedTrack

ACCESS_UNIT = b"\x00\x00\x00\x01\x67\x42\xc0\x20" + b"\x00\x00\x00\x01\x65" + bytes(40_000)


async def test_recv_returns_the_access_unit_with_its_capture_time() -> None:
    outbox = Outbox()
    track = EncodedTrack(outbox)
    assert outbox.push_video(pack_video_header(FLAG_KEYFRAME, 1, 7, 1_700_000_000_123_456) + ACCESS_UNIT)
    packet = await track.recv()
    assert bytes(packet) == ACCESS_UNIT
    assert packet.pts == 1_700_000_000_123_456 and packet.time_base == fractions.Fraction(1, 1_000_000)
    assert track.packets == 1


async def test_each_access_unit_is_reported_sent_when_aiortc_asks_for_the_next() -> None:
    outbox = Outbox()
    track = EncodedTrack(outbox)
    for sequence in range(3):
        outbox.push_video(pack_video_header(0, 1, sequence, 1_700_000_000_000_000 + sequence) + ACCESS_UNIT)
    assert outbox.link.rate is None
    for _ in range(3):
        await track.recv()  # each call reports the previous access unit as sent
    assert outbox.link.rate is not None


async def test_a_probes_padding_never_reaches_rtp() -> None:
    outbox = Outbox()
    track = EncodedTrack(outbox)
    outbox.push_padding(pack_padding(1, 16 * 1024))
    outbox.push_video(pack_video_header(FLAG_KEYFRAME, 1, 3, 1_700_000_000_000_003) + ACCESS_UNIT)
    packet = await track.recv()
    assert bytes(packet) == ACCESS_UNIT and track.packets == 1
    assert outbox.link.delivered == 16 * 1024  # gone at once: over RTP nothing of it is sent
