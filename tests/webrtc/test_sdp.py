"""The answer announces the stream's own profile and level; ICE settings are read strictly."""

from __future__ import annotations

import pytest

from framestream.core.errors import ConfigError
from framestream.service.config import load_settings
from framestream.webrtc.ice import IceServer, parse_ice_hosts, parse_ice_servers
from framestream.webrtc.sdp import h264_profile_level_ids, profile_level_id, with_profile_level_id

ANSWER = (
    "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 97 98 99 100\r\n"
    "a=rtpmap:97 VP8/90000\r\na=rtpmap:98 rtx/90000\r\na=fmtp:98 apt=97\r\n"
    "a=rtpmap:99 H264/90000\r\n"
    "a=fmtp:99 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"
    "a=rtpmap:100 rtx/90000\r\na=fmtp:100 apt=99\r\n"
)


def test_the_level_follows_the_stream() -> None:
    assert profile_level_id("avc1.42C032", 2560, 1600, 30) == "42c032"  # the encoder's own SPS says it
    assert profile_level_id(None, 2560, 1600, 30) == "42c032"  # before it did: the level it will choose
    assert profile_level_id(None, 1280, 800, 30) == "42c020"


def test_only_h264_fmtp_lines_are_rewritten() -> None:
    munged = with_profile_level_id(ANSWER, "42c032")
    assert h264_profile_level_ids(ANSWER) == ["42e01f"]
    assert h264_profile_level_ids(munged) == ["42c032"]
    assert munged.replace("42c032", "42e01f") == ANSWER
    with pytest.raises(ValueError):
        with_profile_level_id(ANSWER, "42c03")


def test_ice_settings() -> None:
    assert parse_ice_hosts("127.0.0.1, ::1") == ("127.0.0.1", "::1")
    with pytest.raises(ConfigError):
        parse_ice_hosts("localhost")
    assert parse_ice_servers("stun:stun.example:3478") == (IceServer(("stun:stun.example:3478",)),)
    assert parse_ice_servers('[{"urls":["turn:t.example:3478?transport=udp"],"username":"u","credential":"p"}]') == (
        IceServer(("turn:t.example:3478?transport=udp",), "u", "p"),)
    for bad in ("http://x", "[{}]", '[{"urls":"turn:x","username":5}]', "[", '{"urls":"turn:x"}'):
        with pytest.raises(ConfigError):
            parse_ice_servers(bad)
    settings = load_settings({"TERMINAL_AUTH_SECRET": "s" * 32, "FRAMESTREAM_ICE_HOSTS": "127.0.0.1",
                              "FRAMESTREAM_MAX_PEER_CONNECTIONS": "4", "FRAMESTREAM_ICE_TIMEOUT_S": "3"})
    assert (settings.ice_hosts, settings.ice_servers, settings.max_peer_connections, settings.ice_timeout_s) == (
        ("127.0.0.1",), (), 4, 3.0)
