"""What the recording tests share: a service's recordings read back over HTTP, and their pictures decoded."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import av
import numpy as np

from tests.support import Service


def recordings(service: Service, frame_id: str, token: str | None = "control") -> list[dict[str, Any]]:
    status, body = service.get(f"/frames/{frame_id}/recordings", token=token)
    assert status == 200, body
    return list(body["recordings"])


def sidecar(service: Service, frame_id: str, rid: str, query: str = "") -> list[dict[str, Any]]:
    status, body, _ = fetch(service, f"/frames/{frame_id}/recordings/{rid}/events{query}",
                            {"Authorization": "Bearer " + service.token("control")})
    assert status == 200, body
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def fetch(service: Service, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, Any]:
    req = urllib.request.Request(service.base + path, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as err:
        return err.code, err.read(), err.headers


def download(service: Service, recording: dict[str, Any], into: Path) -> Path:
    status, data, _ = fetch(service, recording["video"])
    assert status == 200, data[:200]
    path = into / f"{recording['id']}.mp4"
    path.write_bytes(data)
    return path


def decoded(path: Path) -> list[tuple[float, np.ndarray]]:
    """Every picture of the file: (seconds from its start, RGB)."""
    with av.open(str(path)) as container:
        return [(float(f.time or 0.0), f.to_ndarray(format="rgb24")) for f in container.decode(video=0)]


def at(pictures: list[tuple[float, np.ndarray]], seconds: float) -> np.ndarray:
    """The picture showing at `seconds` (the last one that starts at or before it)."""
    shown = [p for t, p in pictures if t <= seconds + 1e-6]
    assert shown, f"no picture at {seconds} s (first at {pictures[0][0] if pictures else None})"
    return shown[-1]
