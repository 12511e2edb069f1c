"""framestream.client: an asyncio client for agents and apps, on the public contract (docs/protocol.md) only.

    from framestream.client import Client, SandboxKey, Superseded

    async with await Client.connect("http://127.0.0.1:7682", key=SandboxKey(secret, "local")) as client:
        view = await client.watch("f1")
        step = await client.click("f1", 100, 60)
        picture = await view.picture_after(step.sent_us)   # the first picture that can show the click
        settled = await view.settle(quiet=0.3)             # the page stopped changing

docs/client.md describes it. Modules: `client` (the facade), `connection` (WebSocket, reconnects), `view` (a
watched frame), `http` (HTTP routes), `pictures` (PyAV decoding, PNG), `steps` (events of a step), `grants`
(tokens), `errors` (typed errors), `wire` (the JSON a client sends). It never imports the service
(`framestream.server`, `framestream.frames`, `framestream.media`).
"""

from framestream.client.client import Client, Step
from framestream.client.errors import (
    BadInput,
    BadMessage,
    Capacity,
    ClientError,
    ConnectionLost,
    DialogOpen,
    Expired,
    Forbidden,
    NavigationFailed,
    Printing,
    RateLimited,
    Replayed,
    ServiceError,
    Superseded,
    TakenOver,
    Unauthorized,
    UnknownDialog,
    UnknownFrame,
    UnknownPage,
    Unresponsive,
)
from framestream.client.grants import GrantSource, SandboxKey, TokenSource
from framestream.client.http import Download, FrameInfo, HttpStep, Screenshot
from framestream.client.pictures import Picture, png_to_rgb, rgb_to_png, scale_png
from framestream.client.view import FrameState, FrameView, VideoConfig

__all__ = [
    "BadInput",
    "BadMessage",
    "Capacity",
    "Client",
    "ClientError",
    "ConnectionLost",
    "DialogOpen",
    "Download",
    "Expired",
    "Forbidden",
    "FrameInfo",
    "FrameState",
    "FrameView",
    "GrantSource",
    "HttpStep",
    "NavigationFailed",
    "Picture",
    "Printing",
    "RateLimited",
    "Replayed",
    "SandboxKey",
    "Screenshot",
    "ServiceError",
    "Step",
    "Superseded",
    "TakenOver",
    "TokenSource",
    "Unauthorized",
    "UnknownDialog",
    "UnknownFrame",
    "UnknownPage",
    "Unresponsive",
    "VideoConfig",
    "png_to_rgb",
    "rgb_to_png",
    "scale_png",
]
