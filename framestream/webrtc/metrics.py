"""The WebRTC series of /metrics: peer connections open, offers, refusals, closes by reason, packets sent, REMB
estimates received."""

from __future__ import annotations

from collections.abc import Callable

from framestream.webrtc.registry import PeerRegistry

Family = Callable[[str, str, str, list[str]], None]
Line = Callable[..., str]


def webrtc_families(peers: PeerRegistry, family: Family, line: Line) -> None:
    family("framestream_webrtc_peers", "gauge", "WebRTC peer connections open.",
           [line("framestream_webrtc_peers", len(peers.open))])
    family("framestream_webrtc_offers_total", "counter", "WebRTC offers received.",
           [line("framestream_webrtc_offers_total", peers.offers)])
    family("framestream_webrtc_refused_total", "counter", "WebRTC offers refused, by error code.",
           [line("framestream_webrtc_refused_total", n, {"code": code}) for code, n in sorted(peers.refused.items())])
    family("framestream_webrtc_closed_total", "counter",
           "WebRTC peer connections closed, by reason (closed by the viewer, failed, stalled: closed by us).",
           [line("framestream_webrtc_closed_total", n, {"reason": r}) for r, n in sorted(peers.closed.items())])
    sent = peers.packets + sum(p.packets for p in peers.open)
    family("framestream_webrtc_pictures_total", "counter", "Access units handed to WebRTC peer connections.",
           [line("framestream_webrtc_pictures_total", sent)])
    rembs = peers.rembs + sum(p.rembs for p in peers.open)
    family("framestream_webrtc_remb_total", "counter",
           "RTCP REMB estimates received for our streams (each sets its viewer's link rate).",
           [line("framestream_webrtc_remb_total", rembs)])
