"""An idle service stays small: `framestream serve` maps no media library before its first frame.

numpy, PyAV (FFmpeg, libx264) and OpenCV load with the first frame (frames/runtime.py), which keeps an idle
service near 44 MB RSS (docs/performance.md); once, setting the allocator up at start imported the pipeline and
doubled it. Checked on the real service, by what its process maps."""

from __future__ import annotations

from pathlib import Path

from tests.support import Service

MEDIA = ("numpy", "libavcodec", "libx264", "cv2")


def test_an_idle_service_maps_no_media_library(tmp_path: Path) -> None:
    service = Service(state_dir=tmp_path).start()
    try:
        assert service.proc is not None
        maps = Path(f"/proc/{service.proc.pid}/maps").read_text()
        assert service.get("/healthz")[0] == 200
        assert [name for name in MEDIA if name in maps] == []
    finally:
        service.stop()
