"""A frame's files in the state dir: what its pages downloaded and what its driver uploaded, within limits.

`files/<frame>/downloads/` holds each download under Chrome's id (`allowAndName`: the browser never picks a path,
never `$HOME`), with `index.json` naming them; `files/<frame>/uploads/` holds files given to the page's file
choosers, one folder an answer. Both go with the frame on purge.

The bookkeeping is pure and runs on the event loop: which downloads are kept (the newest
`FRAMESTREAM_DOWNLOAD_MAX_COUNT`, at most `FRAMESTREAM_DOWNLOAD_QUOTA_BYTES` in all, each at most
`FRAMESTREAM_DOWNLOAD_MAX_BYTES`), which running ones to cancel and which files to delete; how many upload
bytes a frame holds (at most `FRAMESTREAM_UPLOAD_QUOTA_BYTES`, the oldest answers' folders going first). The
file system work is in the plain functions the caller runs off the loop (`save_index`, `remove_download_files`,
`sweep_downloads`, `remove_folders`).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from framestream.service.config import DOWNLOAD_QUOTA_BYTES, UPLOAD_MAX_FILES, UPLOAD_QUOTA_BYTES, Settings
from framestream.service.statefile import write_json_atomically

log = logging.getLogger("framestream.frames")

_UNSAFE = re.compile(r"[^A-Za-z0-9._ ()+,=@-]+")
_DOWNLOAD_ID = re.compile(r"[A-Za-z0-9-]{1,64}")
INDEX_NAME = "index.json"

SWEEP_GRACE_S = 10.0  # a file not in the index younger than this may be a download whose start is on its way


@dataclass(frozen=True, slots=True)
class FileLimits:
    """What a frame's files may take beyond the per-download limits (config.py's Settings hold the defaults)."""

    download_quota_bytes: int = DOWNLOAD_QUOTA_BYTES
    upload_quota_bytes: int = UPLOAD_QUOTA_BYTES
    upload_max_files: int = UPLOAD_MAX_FILES

    @classmethod
    def of(cls, settings: Settings) -> FileLimits:
        return cls(settings.download_quota_bytes, settings.upload_quota_bytes, settings.upload_max_files)


@dataclass(slots=True)
class Download:
    id: str
    name: str
    size: int
    state: str  # "started", "done", "failed"

    def describe(self) -> dict[str, object]:
        return asdict(self)


@dataclass(slots=True)
class DownloadUpdate:
    """What one report of the browser means: what to tell, what to cancel in the browser, what to delete."""

    told: list[Download] = field(default_factory=list)  # downloads whose public state changed
    cancel: list[str] = field(default_factory=list)  # running downloads to cancel (then delete their files)
    delete: list[str] = field(default_factory=list)  # ids whose files go now
    index_changed: bool = False


def safe_name(name: str, fallback: str = "file") -> str:
    """A file name that stays inside its folder and reads the same: no separators, no leading dots."""
    base = _UNSAFE.sub("_", name.replace("\\", "/").rsplit("/", 1)[-1]).strip(" .")
    return base[:200] or fallback


class UniqueNames:
    """Names for the files of one answer, each once: a repeat gets a number in front ("2-a.txt"). Amortised
    O(1) a name, whatever the names (3,000 parts all named `a` cost 3,000 set lookups, not a scan each)."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._next: dict[str, int] = {}

    def take(self, name: str) -> str:
        candidate = name
        k = self._next.get(name, 1)
        while candidate in self._used:
            k += 1
            candidate = f"{k}-{name}"[:255]
        self._next[name] = k
        self._used.add(candidate)
        return candidate


class FrameFiles:
    def __init__(self, root: Path, *, max_download_bytes: int, max_downloads: int,
                 limits: FileLimits | None = None) -> None:
        limits = limits or FileLimits()
        self.root = root
        self.downloads_dir = root / "downloads"
        self.uploads_dir = root / "uploads"
        self.max_download_bytes = max_download_bytes
        self.max_downloads = max_downloads
        self.download_quota_bytes = limits.download_quota_bytes
        self.upload_quota_bytes = limits.upload_quota_bytes
        self.upload_max_files = limits.upload_max_files
        self.downloads: dict[str, Download] = {}  # oldest first
        self._cancelling: set[str] = set()  # running downloads no longer kept, asked to cancel
        self._uploads = 0
        self._answered: collections.OrderedDict[Path, int] = collections.OrderedDict()  # oldest first: bytes
        self._receiving: dict[Path, int] = {}  # answers being received: bytes so far

    @property
    def index_path(self) -> Path:
        return self.downloads_dir / INDEX_NAME

    def load(self) -> None:
        """Read the index a previous run left, and remove what no page can hold any more: the files of downloads
        that did not finish and any not in the index, and every upload (the browser they were given to is gone)."""
        try:
            items = json.loads(self.index_path.read_text()).get("downloads", [])
        except (OSError, ValueError, AttributeError):
            items = []
        for item in items if isinstance(items, list) else []:
            try:
                download = Download(str(item["id"]), str(item["name"]), int(item["size"]), str(item["state"]))
            except (KeyError, TypeError, ValueError):
                continue
            if not _DOWNLOAD_ID.fullmatch(download.id):
                continue
            if download.state == "started":
                download.state = "failed"  # the browser that fetched it is gone
            self.downloads[download.id] = download
        while len(self.downloads) > self.max_downloads:
            del self.downloads[next(iter(self.downloads))]
        sweep_downloads(self.downloads_dir, self.kept_files(), grace_s=0.0)
        shutil.rmtree(self.uploads_dir, ignore_errors=True)

    def index(self) -> dict[str, object]:
        return {"version": 1, "downloads": [d.describe() for d in self.downloads.values()]}

    def save_index(self) -> None:
        self.write_index(self.index())

    def write_index(self, index: dict[str, object]) -> None:
        """Write an index taken on the loop (`index()`). Off the loop."""
        self.downloads_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_json_atomically(self.index_path, index)

    def path(self, download_id: str) -> Path | None:
        download = self.downloads.get(download_id)
        if download is None or download.state != "done" or not _DOWNLOAD_ID.fullmatch(download_id):
            return None
        return self.downloads_dir / download_id

    def kept_files(self) -> frozenset[str]:
        """The ids whose files stay in the downloads folder: running and finished downloads."""
        return frozenset(d.id for d in self.downloads.values() if d.state != "failed")

    @property
    def download_bytes(self) -> int:
        """Bytes the kept downloads hold (a failed one's file is gone)."""
        return sum(d.size for d in self.downloads.values() if d.state != "failed")

    # -- what the browser reports (pure bookkeeping; returns what to tell and what to do) -----------------

    def started(self, download_id: str, name: str) -> DownloadUpdate:
        """A new download. Past the count limit the oldest go, a running one cancelled."""
        update = DownloadUpdate()
        if download_id in self.downloads:
            return update
        if not _DOWNLOAD_ID.fullmatch(download_id):
            update.cancel.append(download_id)  # not a name we could keep or serve: it must not run
            return update
        download = Download(download_id, safe_name(name, "download"), 0, "started")
        self.downloads[download_id] = download
        update.told.append(download)
        update.index_changed = True
        while len(self.downloads) > self.max_downloads:
            self._evict(next(iter(self.downloads)), update)
        return update

    def progressed(self, download_id: str, received: int, state: str) -> DownloadUpdate:
        """Progress of a download (`state`: "progress", "completed", "canceled")."""
        update = DownloadUpdate()
        download = self.downloads.get(download_id)
        if download is None or download.state != "started":
            if not _DOWNLOAD_ID.fullmatch(download_id):
                return update
            if state == "progress":
                if download is None and download_id not in self._cancelling:
                    # Not kept (evicted, or its start refused): it must not run on.
                    self._cancelling.add(download_id)
                    update.cancel.append(download_id)
            else:
                self._cancelling.discard(download_id)
                if download is None or download.state == "failed":
                    update.delete.append(download_id)  # it ended anyway: its file must not stay
            return update
        download.size = max(0, received)
        if state == "progress":
            limit = min(self.max_download_bytes, self.download_quota_bytes)
            if download.size > limit:
                download.state = "failed"
                update.told.append(download)
                update.cancel.append(download.id)
                update.index_changed = True
                self._cancelling.add(download.id)
                return update
            # Within the frame's quota: the oldest others go first (newest kept, as with the count).
            while self.download_bytes > self.download_quota_bytes:
                oldest = next(d.id for d in self.downloads.values() if d.id != download_id and d.state != "failed")
                self._evict(oldest, update)
            return update
        download.state = "done" if state == "completed" else "failed"
        update.told.append(download)
        update.index_changed = True
        if download.state == "failed":
            update.delete.append(download.id)
        return update

    def _evict(self, download_id: str, update: DownloadUpdate) -> None:
        download = self.downloads.pop(download_id)
        update.index_changed = True
        if download.state == "started":
            download.state = "failed"
            update.told.append(download)
            update.cancel.append(download_id)
            self._cancelling.add(download_id)
        else:
            update.delete.append(download_id)

    def browser_gone(self) -> DownloadUpdate:
        """The browser closed: its running downloads never finish."""
        update = DownloadUpdate()
        for download in self.downloads.values():
            if download.state == "started":
                download.state = "failed"
                update.told.append(download)
                update.delete.append(download.id)
                update.index_changed = True
        self._cancelling.clear()
        return update

    def remove_download_files(self, ids: Iterable[str]) -> None:
        """Delete these downloads' files (and Chrome's partial ones of the same id). Off the loop."""
        remove_download_files(self.downloads_dir, ids)

    # -- uploads ------------------------------------------------------------------------------------------

    @property
    def upload_bytes(self) -> int:
        """Upload bytes on disk or being written: every answer kept and every one being received."""
        return sum(self._answered.values()) + sum(self._receiving.values())

    def begin_upload(self) -> Path:
        """A new folder's path for one file chooser's answer (not made yet: `make_folder`, off the loop)."""
        self._uploads += 1
        folder = self.uploads_dir / f"{self._uploads}-{secrets.token_hex(4)}"
        self._receiving[folder] = 0
        return folder

    def grow_upload(self, folder: Path, size: int) -> list[Path] | None:
        """Count `size` more bytes of the answer being received in `folder`. Returns the folders of the oldest
        answers to delete to stay within the frame's upload quota, or None when even all of them would not make
        room (answers being received are not given up for another)."""
        self._receiving[folder] = self._receiving.get(folder, 0) + size
        if sum(self._receiving.values()) > self.upload_quota_bytes:
            return None
        evicted: list[Path] = []
        while self.upload_bytes > self.upload_quota_bytes:
            oldest, _ = self._answered.popitem(last=False)
            evicted.append(oldest)
        return evicted

    def received(self, folder: Path) -> int:
        """Bytes received so far of the answer in `folder`."""
        return self._receiving.get(folder, 0)

    def end_upload(self, folder: Path, *, kept: bool) -> None:
        """The answer in `folder` was handed to the page (`kept`), or refused (its folder is the caller's to
        delete)."""
        size = self._receiving.pop(folder, 0)
        if kept:
            self._answered[folder] = size

    def forget_uploads(self) -> list[Path]:
        """The browser closed: no page holds the answers' files any more. Returns their folders to delete."""
        folders = list(self._answered)
        self._answered.clear()
        return folders

    def purge(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


# -- the file system work, off the event loop ------------------------------------------------------------

def _stem(name: str) -> str:
    return name.split(".", 1)[0]


def remove_download_files(folder: Path, ids: Iterable[str]) -> None:
    """Delete the files of these download ids: `<id>` and Chrome's partial `<id>.*` (`.crdownload`)."""
    wanted = {i for i in ids if _DOWNLOAD_ID.fullmatch(i)}
    if not wanted:
        return
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(INDEX_NAME) or _stem(entry.name) not in wanted:
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)


def sweep_downloads(folder: Path, keep: frozenset[str], *, grace_s: float = SWEEP_GRACE_S) -> list[str]:
    """Delete every file of the downloads folder that is not the index or the file of a kept download (`keep`),
    except ones changed in the last `grace_s` seconds (a download's file may appear just before its start is
    reported). Returns the names removed."""
    removed: list[str] = []
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if entry.name.startswith(INDEX_NAME) or _stem(entry.name) in keep:
            continue
        try:
            if grace_s > 0 and now - entry.stat(follow_symlinks=False).st_mtime < grace_s:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
        removed.append(entry.name)
    return removed


def make_folder(folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder.mkdir(mode=0o700)


def remove_folders(folders: Iterable[Path]) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = ["Download", "DownloadUpdate", "FileLimits", "FrameFiles", "UniqueNames", "make_folder",
           "remove_download_files", "remove_folders", "safe_name", "sweep_downloads"]
