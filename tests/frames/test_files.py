"""frames/files.py: a frame's downloads and uploads stay within their limits (issue 32, #9 and #10).

Pure bookkeeping and the few file operations, on a temporary folder; the real browser and service are in
tests/integration/test_file_limits.py.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from framestream.core.errors import ConfigError
from framestream.frames.files import FileLimits, FrameFiles, UniqueNames, remove_download_files, sweep_downloads
from framestream.service.config import load_settings

GUIDS = [f"0000000{i}-aaaa-bbbb-cccc-dddddddddddd" for i in range(10)]


def files_at(root: Path, *, max_bytes: int = 1000, count: int = 3, quota: int = 10_000,
             upload_quota: int = 100) -> FrameFiles:
    return FrameFiles(root, max_download_bytes=max_bytes, max_downloads=count,
                      limits=FileLimits(download_quota_bytes=quota, upload_quota_bytes=upload_quota))


class CountingSet(set[str]):
    """A set that counts its membership tests: the work UniqueNames does, counted rather than timed."""

    lookups = 0

    def __contains__(self, item: object) -> bool:
        self.lookups += 1
        return super().__contains__(item)


def test_names_repeated_thousands_of_times_stay_unique_without_a_scan() -> None:
    names = UniqueNames()
    names._used = used = CountingSet()  # (its lookups are what this test is about)
    taken = [names.take("a") for _ in range(3000)]
    assert len(set(taken)) == 3000 and taken[:3] == ["a", "2-a", "3-a"]
    assert names.take("2-a") == "2-2-a"  # a name that looks like a repeat's is one too
    assert used.lookups <= 2 * 3001, f"{used.lookups} lookups for 3,001 names: a scan each"


def test_eviction_by_count_cancels_a_running_download_and_deletes_finished_ones(tmp_path: Path) -> None:
    files = files_at(tmp_path, count=2)
    files.started(GUIDS[0], "a.bin")
    files.started(GUIDS[1], "b.bin")
    files.progressed(GUIDS[1], 10, "completed")
    update = files.started(GUIDS[2], "c.bin")  # the oldest, still running, goes: cancelled
    assert update.cancel == [GUIDS[0]] and [(d.id, d.state) for d in update.told] == [
        (GUIDS[2], "started"), (GUIDS[0], "failed")]
    update = files.started(GUIDS[3], "d.bin")  # the oldest now is finished: its file is deleted
    assert update.delete == [GUIDS[1]] and update.cancel == []
    assert list(files.downloads) == [GUIDS[2], GUIDS[3]]


def test_a_download_no_longer_kept_is_cancelled_once_and_its_file_deleted_when_it_ends(tmp_path: Path) -> None:
    files = files_at(tmp_path, count=1)
    files.started(GUIDS[0], "a")
    assert files.started(GUIDS[1], "b").cancel == [GUIDS[0]]
    assert files.progressed(GUIDS[0], 5000, "progress").cancel == []  # asked already
    late = files.progressed(GUIDS[0], 6000, "completed")  # it finished before the cancel reached it
    assert late.delete == [GUIDS[0]] and not late.told
    assert files.progressed(GUIDS[5], 10, "progress").cancel == [GUIDS[5]]  # never started here: stopped


def test_the_frames_quota_evicts_the_oldest_and_a_download_past_it_fails(tmp_path: Path) -> None:
    files = files_at(tmp_path, max_bytes=600, count=10, quota=1000)
    files.started(GUIDS[0], "a")
    files.progressed(GUIDS[0], 500, "completed")
    files.started(GUIDS[1], "b")
    files.progressed(GUIDS[1], 400, "completed")
    files.started(GUIDS[2], "c")
    update = files.progressed(GUIDS[2], 300, "progress")  # 1200 in all: the oldest goes
    assert update.delete == [GUIDS[0]] and files.download_bytes == 700
    update = files.progressed(GUIDS[2], 601, "progress")  # past the size limit: cancelled, failed
    assert update.cancel == [GUIDS[2]] and update.told[0].state == "failed"
    assert files.download_bytes == 400
    small = files_at(tmp_path / "small", max_bytes=10_000, quota=100)
    small.started(GUIDS[0], "a")
    assert small.progressed(GUIDS[0], 101, "progress").cancel == [GUIDS[0]]  # the quota caps one download too


def test_load_keeps_the_index_and_deletes_everything_else(tmp_path: Path) -> None:
    first = files_at(tmp_path)
    first.started(GUIDS[0], "kept.csv")
    first.progressed(GUIDS[0], 3, "completed")
    first.started(GUIDS[1], "running")
    first.save_index()
    downloads = tmp_path / "downloads"
    for name in (GUIDS[0], GUIDS[1] + ".crdownload", GUIDS[2], "stray"):
        (downloads / name).write_bytes(b"abc")
    (tmp_path / "uploads" / "1-ab").mkdir(parents=True)
    (tmp_path / "uploads" / "1-ab" / "x").write_bytes(b"x")
    again = files_at(tmp_path)
    again.load()
    assert {d.id: d.state for d in again.downloads.values()} == {GUIDS[0]: "done", GUIDS[1]: "failed"}
    assert sorted(os.listdir(downloads)) == [GUIDS[0], "index.json"]
    assert not (tmp_path / "uploads").exists()


def test_sweeping_spares_young_files_and_removing_takes_partial_ones(tmp_path: Path) -> None:
    (tmp_path / GUIDS[3]).write_bytes(b"new")
    assert sweep_downloads(tmp_path, frozenset()) == []  # it may be a download whose start is on its way
    old = time.time() - 60
    os.utime(tmp_path / GUIDS[3], (old, old))
    assert sweep_downloads(tmp_path, frozenset()) == [GUIDS[3]]
    (tmp_path / f"{GUIDS[4]}.crdownload").write_bytes(b"part")
    remove_download_files(tmp_path, [GUIDS[4], "../escape"])
    assert os.listdir(tmp_path) == []


def test_upload_quota_evicts_the_oldest_answers_and_refuses_what_cannot_fit(tmp_path: Path) -> None:
    files = files_at(tmp_path, upload_quota=100)
    first = files.begin_upload()
    assert files.grow_upload(first, 60) == []
    files.end_upload(first, kept=True)
    second = files.begin_upload()
    assert files.grow_upload(second, 30) == []
    assert files.grow_upload(second, 30) == [first]  # 120 in all: the oldest answer goes
    files.end_upload(second, kept=True)
    third = files.begin_upload()
    assert files.grow_upload(third, 101) is None  # more than the quota by itself
    files.end_upload(third, kept=False)
    assert files.upload_bytes == 60 and first != second
    assert files.forget_uploads() == [second] and files.upload_bytes == 0


def test_limits_come_from_the_settings_and_bad_values_stop_the_start() -> None:
    settings = load_settings({"TERMINAL_AUTH_SECRET": "s" * 40, "FRAMESTREAM_UPLOAD_MAX_FILES": "8"})
    assert FileLimits.of(settings) == FileLimits(upload_max_files=8)
    for name, bad in (("FRAMESTREAM_DOWNLOAD_QUOTA_BYTES", "x"), ("FRAMESTREAM_UPLOAD_QUOTA_BYTES", "0")):
        with pytest.raises(ConfigError, match=name):
            load_settings({"TERMINAL_AUTH_SECRET": "s" * 40, name: bad})


def test_the_readme_documents_these_defaults() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    documented = {name: int(value) for name, value in re.findall(r"\| `(FRAMESTREAM_\w+)` \| `(\d+)` \|", readme)}
    limits = FileLimits()
    assert documented["FRAMESTREAM_DOWNLOAD_QUOTA_BYTES"] == limits.download_quota_bytes
    assert documented["FRAMESTREAM_UPLOAD_QUOTA_BYTES"] == limits.upload_quota_bytes
    assert documented["FRAMESTREAM_UPLOAD_MAX_FILES"] == limits.upload_max_files
