"""One frozen Settings object, read from the environment and flags and validated at start."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from framestream.core.errors import ConfigError
from framestream.core.urls import is_loopback
from framestream.webrtc.ice import IceServer, parse_ice_hosts, parse_ice_servers

MAX_ENCODED_WIDTH = 2560
MAX_ENCODED_HEIGHT = 1600
MIN_CSS_SIZE = 64
MAX_CSS_SIZE = 4096
DEFAULT_CSS_SIZE = (1280, 800)
DEFAULT_DPR = 2
MIN_SECRET_BYTES = 32
# Used only with --insecure-dev, which says so loudly on every start.
INSECURE_DEV_SECRET = "framestream-insecure-dev-secret-do-not-use-in-production"


@dataclass(frozen=True, slots=True)
class FrameSize:
    """A frame's CSS size and device pixel ratio; `width`/`height` are the encoded (display) pixels."""

    css_width: int
    css_height: int
    dpr: int

    @property
    def width(self) -> int:
        return self.css_width * self.dpr

    @property
    def height(self) -> int:
        return self.css_height * self.dpr

    @property
    def light(self) -> tuple[int, int]:
        """The light stream's size (framestream/media/light.py): the CSS size, even (x264's 4:2:0)."""
        return max(2, self.css_width // 2 * 2), max(2, self.css_height // 2 * 2)


def frame_size(css_width: object, css_height: object, dpr: object = DEFAULT_DPR) -> FrameSize:
    """Validate a requested size. dpr is 1 or 2 and drops to 1 when 2 would exceed 2560x1600 encoded pixels;
    CSS sizes are even so the 4:2:0 picture has whole chroma samples at dpr 1 too."""
    for name, value in (("width", css_width), ("height", css_height), ("dpr", dpr)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name} must be a whole number, got {value!r}")
    assert isinstance(css_width, int) and isinstance(css_height, int) and isinstance(dpr, int)
    if dpr not in (1, 2):
        raise ConfigError(f"dpr must be 1 or 2, got {dpr}")
    if not (MIN_CSS_SIZE <= css_width <= MAX_CSS_SIZE and MIN_CSS_SIZE <= css_height <= MAX_CSS_SIZE):
        raise ConfigError(
            f"frame size {css_width}x{css_height} is out of range: each side must be {MIN_CSS_SIZE}..{MAX_CSS_SIZE}"
        )
    if css_width > MAX_ENCODED_WIDTH or css_height > MAX_ENCODED_HEIGHT:
        raise ConfigError(
            f"frame size {css_width}x{css_height} exceeds {MAX_ENCODED_WIDTH}x{MAX_ENCODED_HEIGHT} even at dpr 1"
        )
    css_width -= css_width % 2
    css_height -= css_height % 2
    if dpr == 2 and (css_width * 2 > MAX_ENCODED_WIDTH or css_height * 2 > MAX_ENCODED_HEIGHT):
        dpr = 1
    return FrameSize(css_width, css_height, dpr)


_FRAME_ARG = re.compile(r"^(?P<url>.+?)(?:@(?P<w>[^@x]+)x(?P<h>[^@x]+))?$")


def parse_frame_arg(arg: str) -> tuple[str, FrameSize]:
    """`URL` or `URL@WxH` from `--frame`."""
    match = _FRAME_ARG.match(arg.strip())
    if not match or not match.group("url"):
        raise ConfigError(f"--frame {arg!r}: expected URL or URL@WIDTHxHEIGHT")
    w, h = match.group("w"), match.group("h")
    if w is None or h is None:
        return match.group("url"), frame_size(*DEFAULT_CSS_SIZE)
    try:
        width, height = int(w), int(h)
    except ValueError as exc:
        raise ConfigError(f"--frame {arg!r}: size must be WIDTHxHEIGHT in whole CSS pixels") from exc
    return match.group("url"), frame_size(width, height)


def _default_chrome() -> str:
    for candidate in ("/usr/bin/chromium", "/usr/bin/google-chrome", "/usr/bin/chromium-browser"):
        if os.path.exists(candidate):
            return candidate
    return shutil.which("chromium") or "/usr/bin/chromium"


def _default_state_dir() -> Path:
    return Path("~/.local/state/framestream").expanduser()


DOWNLOAD_QUOTA_BYTES: Final = 1024**3  # all of a frame's kept downloads
UPLOAD_QUOTA_BYTES: Final = 256 * 1024**2  # all of a frame's uploads on disk
UPLOAD_MAX_FILES: Final = 64  # parts in one file chooser's answer


@dataclass(frozen=True, slots=True)
class Settings:
    """What the service runs with. Every default is written here and only here: `load_settings` sets just
    what the environment and the command line give."""

    secret: bytes
    insecure_dev: bool
    sandbox_id: str = "local"
    host: str = "127.0.0.1"
    port: int = 7682
    shared_frames: bool = True
    max_browsers: int = 6
    idle_pause_s: float = 5.0
    paused_release_s: float = 10.0  # a paused frame gives back its capture, encoder and kept picture after this
    person_hold_s: float = 60.0  # a person who took over keeps the frame this long after their last input
    state_dir: Path = field(default_factory=_default_state_dir)
    chrome_path: str = field(default_factory=_default_chrome)
    xvfb_path: str = "Xvfb"
    fps: int = 30
    input_refresh_hz: int = 60  # the display's rate while someone gives input (core/refresh.py); 0: always `fps`
    max_message_bytes: int = 64 * 1024
    max_watch_per_connection: int = 16
    max_connections: int = 256  # welcomed ones; those still waiting for hello have their own caps (below)
    max_pending_connections: int = 32
    max_pending_per_address: int = 8
    input_rate_per_s: float = 200.0
    message_rate_per_s: float = 200.0  # every client message (core/ratelimit.py: some types have their own)
    max_queued_text_bytes: int = 1024 * 1024  # text queued for a client that does not read (4429 past it)
    hello_timeout_s: float = 5.0
    allowed_origins: tuple[str, ...] = ()
    allowed_url_hosts: tuple[str, ...] = ()  # empty: any host
    # A frame is a whole tab (docs/protocol.md): what pages are granted without a prompt (CDP permission names),
    # how long a dialog waits for its answer, and the limits on files going in and out.
    permissions: tuple[str, ...] = ()
    dialog_timeout_s: float = 60.0
    upload_max_bytes: int = 64 * 1024 * 1024
    download_max_bytes: int = 256 * 1024 * 1024
    download_max_count: int = 32
    download_quota_bytes: int = DOWNLOAD_QUOTA_BYTES
    upload_quota_bytes: int = UPLOAD_QUOTA_BYTES
    upload_max_files: int = UPLOAD_MAX_FILES
    clipboard_to_viewers: bool = False  # copied text also to view-only viewers
    webgl: bool = True  # WebGL through SwiftShader (CPU); off: no GPU process work at all
    # WebRTC (framestream/webrtc, deploy/README.md): host candidates offered (empty: every interface but
    # loopback), STUN/TURN servers, peer connections at once, and how long one may take to connect or reconnect.
    ice_hosts: tuple[str, ...] = ()
    ice_servers: tuple[IceServer, ...] = ()
    max_peer_connections: int = 32
    max_peers_per_connection: int = 4  # so one viewer cannot take every peer slot
    ice_timeout_s: float = 10.0
    # Recordings (framestream/recording, docs/protocol.md "Recordings"): every frame or per frame, who may fetch
    # them, and how much is kept (the oldest go first; no age limit when None).
    record: bool = False
    record_viewers: bool = False
    record_max_bytes: int = 2 * 1024**3
    record_max_age_s: float | None = None
    frames: tuple[tuple[str, FrameSize], ...] = field(default_factory=tuple)


# The numeric settings that one environment variable each may set: field -> (variable, type, lowest, highest).
_ENV_NUMBERS: Final[Mapping[str, tuple[str, type[int] | type[float], float, float]]] = {
    "max_browsers": ("MAX_BROWSERS", int, 1, 64),
    "idle_pause_s": ("FRAME_IDLE_PAUSE_S", float, 0.1, 86400),
    "paused_release_s": ("FRAMESTREAM_PAUSED_RELEASE_S", float, 0.1, 86400),
    "person_hold_s": ("FRAMESTREAM_PERSON_HOLD_S", float, 0.1, 86400),
    "input_refresh_hz": ("FRAMESTREAM_INPUT_REFRESH_HZ", int, 0, 240),
    "max_message_bytes": ("FRAMESTREAM_MAX_MESSAGE_BYTES", int, 1024, 16 * 1024 * 1024),
    "max_watch_per_connection": ("FRAMESTREAM_MAX_WATCH_PER_CONNECTION", int, 1, 256),
    "max_connections": ("FRAMESTREAM_MAX_CONNECTIONS", int, 1, 100_000),
    "max_pending_connections": ("FRAMESTREAM_MAX_PENDING_CONNECTIONS", int, 1, 100_000),
    "max_pending_per_address": ("FRAMESTREAM_MAX_PENDING_PER_ADDRESS", int, 1, 100_000),
    "input_rate_per_s": ("FRAMESTREAM_INPUT_RATE", float, 1.0, 100_000.0),
    "message_rate_per_s": ("FRAMESTREAM_MESSAGE_RATE", float, 1.0, 100_000.0),
    "max_queued_text_bytes": ("FRAMESTREAM_MAX_QUEUED_TEXT_BYTES", int, 4096, 1024**3),
    "hello_timeout_s": ("FRAMESTREAM_HELLO_TIMEOUT_S", float, 0.5, 60.0),
    "dialog_timeout_s": ("FRAMESTREAM_DIALOG_TIMEOUT_S", float, 0.5, 86400),
    "upload_max_bytes": ("FRAMESTREAM_UPLOAD_MAX_BYTES", int, 1, 4 * 1024**3),
    "download_max_bytes": ("FRAMESTREAM_DOWNLOAD_MAX_BYTES", int, 1, 64 * 1024**3),
    "download_max_count": ("FRAMESTREAM_DOWNLOAD_MAX_COUNT", int, 1, 10_000),
    "download_quota_bytes": ("FRAMESTREAM_DOWNLOAD_QUOTA_BYTES", int, 1, 1024**4),
    "upload_quota_bytes": ("FRAMESTREAM_UPLOAD_QUOTA_BYTES", int, 1, 1024**4),
    "upload_max_files": ("FRAMESTREAM_UPLOAD_MAX_FILES", int, 1, 10_000),
    "max_peer_connections": ("FRAMESTREAM_MAX_PEER_CONNECTIONS", int, 0, 10_000),
    "max_peers_per_connection": ("FRAMESTREAM_MAX_PEERS_PER_CONNECTION", int, 1, 256),
    "ice_timeout_s": ("FRAMESTREAM_ICE_TIMEOUT_S", float, 1.0, 600.0),
    "record_max_bytes": ("FRAMESTREAM_RECORD_MAX_BYTES", int, 1024 * 1024, 1024**5),
    "record_max_age_s": ("FRAMESTREAM_RECORD_MAX_AGE_S", float, 1.0, 10 * 365 * 86400),
}
# Switches that one environment variable each may set: field -> variable.
_ENV_SWITCHES: Final[Mapping[str, str]] = {
    "clipboard_to_viewers": "FRAMESTREAM_CLIPBOARD_TO_VIEWERS",
    "webgl": "FRAMESTREAM_WEBGL",
    "record": "FRAMESTREAM_RECORD",
    "record_viewers": "FRAMESTREAM_RECORD_VIEWERS",
}


def _env_number(env: Mapping[str, str], name: str, low: float, high: float) -> float | None:
    """The variable's value checked against [low, high]; None when it is unset or empty (keep the default)."""
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}={raw!r} is not a number") from exc
    if not low <= value <= high:
        raise ConfigError(f"{name}={raw!r} must be between {low:g} and {high:g}")
    return value


def _env_list(env: Mapping[str, str], name: str) -> tuple[str, ...] | None:
    """A comma-separated variable as a tuple of its non-empty items; None when it is unset."""
    raw = env.get(name)
    return None if raw is None else tuple(item.strip() for item in raw.split(",") if item.strip())


def _env_switch(env: Mapping[str, str], name: str) -> bool | None:
    """An on/off variable; None when it is unset."""
    raw = env.get(name)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value not in ("on", "off", "true", "false", "1", "0"):
        raise ConfigError(f"{name}={value!r} must be on or off")
    return value in ("on", "true", "1")


def _secret(env: Mapping[str, str], insecure_dev: bool) -> bytes:
    raw_secret = env.get("TERMINAL_AUTH_SECRET", "")
    if raw_secret:
        secret = raw_secret.encode()
        if len(secret) < MIN_SECRET_BYTES:
            raise ConfigError(
                f"TERMINAL_AUTH_SECRET is {len(secret)} bytes; it must be at least {MIN_SECRET_BYTES} bytes"
            )
        return secret
    if insecure_dev:
        return INSECURE_DEV_SECRET.encode()
    raise ConfigError(
        "TERMINAL_AUTH_SECRET is not set: set it to a random string of at least "
        f"{MIN_SECRET_BYTES} bytes (or pass --insecure-dev for a local demo)"
    )


def load_settings(
    env: Mapping[str, str] | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    insecure_dev: bool = False,
    frames: tuple[str, ...] = (),
) -> Settings:
    """Settings from the environment and the command line (None and unset variables keep the defaults)."""
    env = os.environ if env is None else env
    secret = _secret(env, insecure_dev)
    given: dict[str, Any] = {}
    for name, variable in {"shared_frames": "SHARED_FRAMES", **_ENV_SWITCHES}.items():
        if (switch := _env_switch(env, variable)) is not None:
            given[name] = switch
    if (permissions := _env_list(env, "FRAMESTREAM_PERMISSIONS")) is not None:
        given["permissions"] = permissions
    for name, (variable, kind, low, high) in _ENV_NUMBERS.items():
        if (value := _env_number(env, variable, low, high)) is not None:
            given[name] = kind(value)
    if state_dir := env.get("FRAMESTREAM_STATE_DIR"):
        given["state_dir"] = Path(state_dir).expanduser()
    if chrome := env.get("CHROME_PATH"):
        given["chrome_path"] = chrome
    if (sandbox := env.get("SANDBOX_ID")) is not None:
        if not sandbox or len(sandbox) > 128:
            raise ConfigError("SANDBOX_ID must be 1..128 characters")
        given["sandbox_id"] = sandbox
    if host is not None:
        given["host"] = host
    if port is not None:
        if not 0 < port < 65536:
            raise ConfigError(f"port {port} is out of range")
        given["port"] = port
    if (origins := _env_list(env, "FRAMESTREAM_ALLOWED_ORIGINS")) is not None:
        given["allowed_origins"] = origins
    if (url_hosts := _env_list(env, "FRAMESTREAM_URL_ALLOW_HOSTS")) is not None:
        given["allowed_url_hosts"] = tuple(h.lower() for h in url_hosts)
    if ice_hosts := env.get("FRAMESTREAM_ICE_HOSTS"):
        given["ice_hosts"] = parse_ice_hosts(ice_hosts)
    if ice_servers := env.get("FRAMESTREAM_ICE_SERVERS"):
        given["ice_servers"] = parse_ice_servers(ice_servers)
    given["frames"] = tuple(parse_frame_arg(f) for f in frames)
    # --insecure-dev only counts when it is what supplied the secret.
    dev = insecure_dev and not env.get("TERMINAL_AUTH_SECRET")
    settings = Settings(secret=secret, insecure_dev=dev, **given)
    if dev and not is_loopback(settings.host):
        # Its key is public: anyone who reached the port could mint tokens (issue 32, suspected and confirmed).
        raise ConfigError(f"--insecure-dev serves on loopback only, not {settings.host!r}: set TERMINAL_AUTH_SECRET")
    if settings.frames and not settings.shared_frames:
        raise ConfigError("--frame is refused: SHARED_FRAMES=off keeps every frame private to its viewer")
    return settings
