"""Inside a namespace whose `lo` is a 1 Mbit/s token bucket (tests/netns): a viewer of a page heavier than the link
takes the light stream; the page then goes still, and the link recovers (the bucket is removed). Prints, as JSON on
its last line, what the viewer was shown and when:

    python -m tests.netns.link_recovery '{"for_ms": 7000, "size": [640, 400, 2]}'

The page (tests/pages/noise_then_stripes.html) ends still on columns one device pixel wide, which only the full
stream shows: `stripes` is the mean difference between neighbouring columns of the last decoded picture there
(about 255 when shown, near 0 on the light stream's CSS-size picture).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import numpy as np

from framestream.core.wire import KIND_PADDING
from tests.netns.slowlink import served_frame
from tests.support import PAGES, StreamClient, VideoMessage

STRIPES = (slice(200, 600), slice(200, 600))  # (rows, columns) in device pixels, as the page draws them


class Viewer(StreamClient):
    def _binary(self, raw: bytes) -> Any:
        return None if raw[0] == KIND_PADDING else super()._binary(raw)  # a probe's padding: the link's, not ours


def stripes(picture: np.ndarray) -> float:
    """Mean luma difference between neighbouring columns where the page draws its columns (0 when not that big)."""
    if picture.shape[0] < STRIPES[0].stop or picture.shape[1] < STRIPES[1].stop:
        return 0.0
    luma = picture[STRIPES].astype(np.int16).mean(axis=2)
    return float(np.abs(np.diff(luma, axis=1)).mean())


async def scenario(args: dict[str, Any]) -> dict[str, Any]:
    page = f"noise_then_stripes.html?for={args['for_ms']}"
    result: dict[str, Any] = {}
    async with served_frame(PAGES, page, args.get("size", [640, 400, 2])) as served:
        client = await Viewer.connect(served.service)
        try:
            await client.send({"type": "watch", "frame": served.frame_id})
            result.update(await follow(client, float(args.get("timeout_s", 90.0))))
        finally:
            await client.close()
    if not result.get("back_after_s"):
        result["service_log_tail"] = served.log_tail
    return result


async def follow(client: Viewer, timeout_s: float) -> dict[str, Any]:
    """Read until the viewer, light while the page moved, is shown the still page's columns on the full stream."""
    out: dict[str, Any] = {"configs": []}
    light = False
    lifted_at: float | None = None
    picture: np.ndarray | None = None
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        msg = await client.receive(left)
        if isinstance(msg, dict) and msg.get("type") == "video-config":
            light = msg.get("stream") == "light"
            out["configs"].append([msg["width"], msg["height"], msg.get("stream", "full")])
            continue
        if not isinstance(msg, VideoMessage):
            continue
        decoded = client.decode(msg)  # every picture, in order, so the decoder misses no reference
        picture = decoded if decoded is not None else picture
        if light and msg.refinement and lifted_at is None:
            # Sharpened on the light stream: the page is still. The link recovers now.
            lift = await asyncio.create_subprocess_exec("tc", "qdisc", "del", "dev", "lo", "root")
            assert await lift.wait() == 0, "tc could not remove the token bucket"
            lifted_at = time.monotonic()
            out["still_light_picture"] = None if picture is None else list(picture.shape[:2])
            out["stripes_on_light"] = None if picture is None else round(stripes(picture), 1)
        if lifted_at is not None and not light and picture is not None and stripes(picture) > 60:
            out["back_after_s"] = round(time.monotonic() - lifted_at, 2)
            break
    out["lifted"] = lifted_at is not None
    out["last_picture"] = None if picture is None else list(picture.shape[:2])
    out["stripes"] = None if picture is None else round(stripes(picture), 1)
    return out


def main() -> None:
    print(json.dumps(asyncio.run(scenario(json.loads(sys.argv[1])))), flush=True)


if __name__ == "__main__":
    main()
