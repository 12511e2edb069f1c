from __future__ import annotations

import pytest

from framestream.core.errors import ConfigError
from framestream.service.config import FrameSize, Settings, frame_size, load_settings, parse_frame_arg

SECRET = "s" * 32


def test_sizes_validate_and_clamp_dpr() -> None:
    assert frame_size(1280, 800) == FrameSize(1280, 800, 2)
    assert frame_size(1280, 800).width == 2560
    assert frame_size(1600, 900, 2) == FrameSize(1600, 900, 1)  # 3200 wide would exceed 2560
    assert frame_size(641, 401, 1) == FrameSize(640, 400, 1)  # even for 4:2:0
    for bad in [(0, 0, 2), (99999, 5, 2), ("wide", 400, 2), (640, 400, 3), (640.5, 400, 1), (True, 400, 1),
                (3000, 800, 1)]:
        with pytest.raises(ConfigError):
            frame_size(*bad)


def test_frame_argument() -> None:
    assert parse_frame_arg("http://127.0.0.1:3000/") == ("http://127.0.0.1:3000/", FrameSize(1280, 800, 2))
    assert parse_frame_arg("http://h/x@640x400") == ("http://h/x", FrameSize(640, 400, 2))
    with pytest.raises(ConfigError, match="WIDTHxHEIGHT"):
        parse_frame_arg("http://h/@axb")


def test_secret_is_required_and_long_enough() -> None:
    with pytest.raises(ConfigError, match="TERMINAL_AUTH_SECRET is not set"):
        load_settings({})
    with pytest.raises(ConfigError, match="at least 32 bytes"):
        load_settings({"TERMINAL_AUTH_SECRET": "short"})
    dev = load_settings({}, insecure_dev=True)
    assert dev.insecure_dev and len(dev.secret) >= 32
    real = load_settings({"TERMINAL_AUTH_SECRET": SECRET}, insecure_dev=True)
    assert not real.insecure_dev and real.secret == SECRET.encode()


def test_environment_is_validated() -> None:
    base = {"TERMINAL_AUTH_SECRET": SECRET}
    s = load_settings({**base, "SHARED_FRAMES": "off", "MAX_BROWSERS": "2", "FRAME_IDLE_PAUSE_S": "1.5",
                       "SANDBOX_ID": "sbx-1"})
    assert (s.shared_frames, s.max_browsers, s.idle_pause_s, s.sandbox_id) == (False, 2, 1.5, "sbx-1")
    for env, match in [({"SHARED_FRAMES": "maybe"}, "on or off"), ({"MAX_BROWSERS": "0"}, "between"),
                       ({"FRAME_IDLE_PAUSE_S": "soon"}, "not a number")]:
        with pytest.raises(ConfigError, match=match):
            load_settings({**base, **env})
    with pytest.raises(ConfigError, match="SHARED_FRAMES=off"):
        load_settings({**base, "SHARED_FRAMES": "off"}, frames=("http://h/",))


def test_limits_come_from_the_environment() -> None:
    s = load_settings({"TERMINAL_AUTH_SECRET": SECRET, "FRAMESTREAM_MAX_MESSAGE_BYTES": "4096",
                       "FRAMESTREAM_MAX_WATCH_PER_CONNECTION": "2", "FRAMESTREAM_MAX_CONNECTIONS": "3",
                       "FRAMESTREAM_INPUT_RATE": "50", "FRAMESTREAM_HELLO_TIMEOUT_S": "1",
                       "FRAMESTREAM_URL_ALLOW_HOSTS": "127.0.0.1, Example.com"})
    assert (s.max_message_bytes, s.max_watch_per_connection, s.max_connections) == (4096, 2, 3)
    assert (s.input_rate_per_s, s.hello_timeout_s) == (50.0, 1.0)
    assert s.allowed_url_hosts == ("127.0.0.1", "example.com")
    with pytest.raises(ConfigError, match="FRAMESTREAM_MAX_CONNECTIONS"):
        load_settings({"TERMINAL_AUTH_SECRET": SECRET, "FRAMESTREAM_MAX_CONNECTIONS": "-1"})



def test_the_limits_on_waiting_connections_and_messages_come_from_the_environment() -> None:
    defaults = load_settings({"TERMINAL_AUTH_SECRET": SECRET})
    assert (defaults.max_pending_connections, defaults.max_pending_per_address) == (32, 8)
    assert (defaults.message_rate_per_s, defaults.max_queued_text_bytes) == (200.0, 1024 * 1024)
    s = load_settings({"TERMINAL_AUTH_SECRET": SECRET, "FRAMESTREAM_MAX_PENDING_CONNECTIONS": "64",
                       "FRAMESTREAM_MAX_PENDING_PER_ADDRESS": "4", "FRAMESTREAM_MESSAGE_RATE": "50",
                       "FRAMESTREAM_MAX_QUEUED_TEXT_BYTES": "65536"})
    assert (s.max_pending_connections, s.max_pending_per_address, s.message_rate_per_s,
            s.max_queued_text_bytes) == (64, 4, 50.0, 65536)
    for name, value in [("FRAMESTREAM_MAX_PENDING_PER_ADDRESS", "0"), ("FRAMESTREAM_MAX_QUEUED_TEXT_BYTES", "100"),
                        ("FRAMESTREAM_MESSAGE_RATE", "0")]:
        with pytest.raises(ConfigError, match=name):
            load_settings({"TERMINAL_AUTH_SECRET": SECRET, name: value})


def test_defaults_are_the_documented_ones_and_unset_or_empty_variables_keep_them() -> None:
    defaults = load_settings({"TERMINAL_AUTH_SECRET": SECRET})
    assert defaults == Settings(secret=SECRET.encode(), insecure_dev=False)
    # README's environment table
    assert (defaults.sandbox_id, defaults.shared_frames, defaults.max_browsers, defaults.idle_pause_s) == (
        "local", True, 6, 5.0)
    assert (defaults.host, defaults.port, defaults.max_message_bytes, defaults.max_watch_per_connection) == (
        "127.0.0.1", 7682, 65536, 16)
    assert (defaults.max_connections, defaults.input_rate_per_s, defaults.hello_timeout_s) == (256, 200.0, 5.0)
    assert str(defaults.state_dir).endswith("/.local/state/framestream") and defaults.state_dir.is_absolute()
    assert (defaults.allowed_origins, defaults.allowed_url_hosts, defaults.frames) == ((), (), ())
    empty = {name: "" for name in ("MAX_BROWSERS", "FRAME_IDLE_PAUSE_S", "FRAMESTREAM_STATE_DIR", "CHROME_PATH",
                                   "FRAMESTREAM_ALLOWED_ORIGINS", "FRAMESTREAM_URL_ALLOW_HOSTS",
                                   "FRAMESTREAM_MAX_MESSAGE_BYTES", "FRAMESTREAM_MAX_WATCH_PER_CONNECTION",
                                   "FRAMESTREAM_MAX_CONNECTIONS", "FRAMESTREAM_INPUT_RATE",
                                   "FRAMESTREAM_HELLO_TIMEOUT_S")}
    assert load_settings({"TERMINAL_AUTH_SECRET": SECRET, **empty}) == defaults
    # ... but an empty switch or sandbox id is a mistake, not "use the default"
    for name, match in [("SHARED_FRAMES", "on or off"), ("SANDBOX_ID", "1..128")]:
        with pytest.raises(ConfigError, match=match):
            load_settings({"TERMINAL_AUTH_SECRET": SECRET, name: ""})


def test_flags_set_host_port_and_frames() -> None:
    s = load_settings({"TERMINAL_AUTH_SECRET": SECRET}, host="0.0.0.0", port=8080, frames=("http://h/@640x400",))
    assert (s.host, s.port, s.frames) == ("0.0.0.0", 8080, (("http://h/", FrameSize(640, 400, 2)),))
    for port in (0, 65536):
        with pytest.raises(ConfigError, match="out of range"):
            load_settings({"TERMINAL_AUTH_SECRET": SECRET}, port=port)


def test_url_policy() -> None:
    from framestream.frames.urls import check_url

    assert check_url("https://example.com/x") == "https://example.com/x"
    for bad in ["file:///etc/passwd", "chrome://settings", "javascript:alert(1)", "data:text/html,hi",
                "devtools://devtools/x", "http://", "", 5, "x" * 9000]:
        with pytest.raises(ValueError):
            check_url(bad)
    assert check_url("http://127.0.0.1:3000/", ("127.0.0.1",))
    with pytest.raises(ValueError, match="ALLOW_HOSTS"):
        check_url("http://evil.example/", ("127.0.0.1",))


def test_insecure_dev_serves_on_loopback_only() -> None:
    """Its signing key is public: on 0.0.0.0 anyone who reached the port could mint a drive token."""
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert load_settings({}, host=host, insecure_dev=True).insecure_dev
    for host in ("0.0.0.0", "::", "192.0.2.7", "example.test"):
        with pytest.raises(ConfigError, match="loopback only"):
            load_settings({}, host=host, insecure_dev=True)
    assert load_settings({"TERMINAL_AUTH_SECRET": SECRET}, host="0.0.0.0").host == "0.0.0.0"
