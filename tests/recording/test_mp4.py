"""The fMP4 writer on real libx264 access units: PyAV and ffprobe read what it writes, at the times it says."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import av
import numpy as np
import pytest

from framestream.media.encoder import H264Encoder
from framestream.recording import mp4


def _pictures(count: int, width: int = 320, height: int = 192) -> list[tuple[bytes, bool, np.ndarray]]:
    encoder = H264Encoder(width, height)
    out = []
    for i in range(count):
        bgrx = np.zeros((height, width, 4), np.uint8)
        bgrx[:, :, 2] = 40 + i * 20  # red rises picture by picture
        encoder.update(bgrx)
        picture = encoder.encode(keyframe=i in (0, 5))
        out.append((picture.data, picture.keyframe, bgrx))
    encoder.close()
    return out


def _write(path: Path, pictures: list[tuple[bytes, bool, np.ndarray]], times_us: list[int],
           per_fragment: int = 2) -> None:
    sets = mp4.parameter_sets(pictures[0][0])
    assert sets is not None
    head = mp4.header(320, 192, *sets)
    samples = []
    for i, (data, key, _) in enumerate(pictures):
        end = times_us[i + 1] if i + 1 < len(times_us) else times_us[i] + 40_000
        samples.append(mp4.Sample(mp4.ticks(times_us[i]), mp4.ticks(end) - mp4.ticks(times_us[i]), key,
                                  mp4.to_length_prefixed(data)))
    with open(path, "wb") as f:
        f.write(head.data)
        for n, start in enumerate(range(0, len(samples), per_fragment)):
            f.write(mp4.fragment(n + 1, samples[start:start + per_fragment]))
        end_ticks = samples[-1].dts + samples[-1].duration
        mvhd, mehd = mp4.duration_fields(end_ticks)
        f.seek(head.mvhd_duration_at)
        f.write(mvhd)
        f.seek(head.mehd_duration_at)
        f.write(mehd)


def test_pyav_decodes_every_picture_at_its_time(tmp_path: Path) -> None:
    pictures = _pictures(8)
    # A still stretch of 5 s between the 3rd and 4th picture: no sample covers it.
    times = [0, 33_000, 66_000, 5_066_000, 5_100_000, 5_133_000, 5_166_000, 5_200_000]
    path = tmp_path / "r.mp4"
    _write(path, pictures, times)
    with av.open(str(path)) as container:
        frames = list(container.decode(video=0))
        assert len(frames) == 8
        for frame, (_, _, bgrx), t in zip(frames, pictures, times, strict=True):
            assert frame.time is not None and abs(frame.time - t / 1e6) < 0.001
            rgb = frame.to_ndarray(format="rgb24")
            assert abs(int(rgb[96, 160, 0]) - int(bgrx[96, 160, 2])) < 8


def test_ffprobe_reads_the_duration_and_the_keyframes(tmp_path: Path) -> None:
    ffprobe = shutil.which("ffprobe")
    if ffprobe is None:
        pytest.fail("ffprobe is missing: `make test` installs ffmpeg")
    pictures = _pictures(8)
    times = [i * 33_333 for i in range(8)]
    path = tmp_path / "r.mp4"
    _write(path, pictures, times)
    out = subprocess.run([ffprobe, "-v", "error", "-show_entries", "format=duration:packet=pts_time,flags",
                          "-of", "json", str(path)], capture_output=True, check=True, text=True).stdout
    info = json.loads(out)
    assert abs(float(info["format"]["duration"]) - (times[-1] + 40_000) / 1e6) < 0.01
    keys = [float(p["pts_time"]) for p in info["packets"] if "K" in p["flags"]]
    assert keys == pytest.approx([0.0, times[5] / 1e6], abs=0.001)


def test_a_truncated_last_fragment_leaves_the_whole_ones_playable(tmp_path: Path) -> None:
    pictures = _pictures(8)
    times = [i * 33_333 for i in range(8)]
    path = tmp_path / "r.mp4"
    _write(path, pictures, times)
    data = path.read_bytes()
    last = data.rindex(b"moof") - 4
    for cut in (last + 40, len(data) - 100):  # killed in the middle of writing the last fragment's moof, its mdat
        path.write_bytes(data[:cut])
        whole = mp4.whole_length(str(path))
        assert whole == last
        with open(path, "r+b") as f:
            f.truncate(whole)
        with av.open(str(path)) as container:
            frames = list(container.decode(video=0))
        assert len(frames) == 6
