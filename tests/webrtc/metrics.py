"""Reading one series of the service's /metrics."""

from __future__ import annotations

from tests.support import Service


def metric(service: Service, name: str, labels: str = "") -> float:
    """The value of `name{labels}` (labels as written, `reason="stalled"`; "" for none); 0 when absent."""
    status, body = service.get("/metrics", token=None)
    assert status == 200
    key = f"{name}{{{labels}}}" if labels else name
    for line in body.decode().splitlines():
        if line.startswith(key + " "):
            return float(line.split()[-1])
    return 0.0
