"""A frame's files in the state dir: what its pages downloaded and what its driver uploaded.

`files/<frame>/downloads/` holds each download under Chrome's id (`allowAndName`: the browser never picks a path,
never `$HOME`), with `index.json` naming them; `files/<frame>/uploads/` holds files given to the page's file
choosers. Both go with the frame on purge. The bookkeeping (limits, states) is pure; the few small writes are
the caller's to run off the event loop (`save_index`).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from framestream.statefile import write_json_atomically

_UNSAFE = re.compile(r"[^A-Za-z0-9._ ()+,=@-]+")


@dataclass(slots=True)
class Download:
    id: str
    name: str
    size: int
    state: str  # "started", "done", "failed"

    def describe(self) -> dict[str, object]:
        return asdict(self)


def safe_name(name: str, fallback: str = "file") -> str:
    """A file name that stays inside its folder and reads the same: no separators, no leading dots."""
    base = _UNSAFE.sub("_", name.replace("\\", "/").rsplit("/", 1)[-1]).strip(" .")
    return base[:200] or fallback


class FrameFiles:
    def __init__(self, root: Path, *, max_download_bytes: int, max_downloads: int) -> None:
        self.root = root
        self.downloads_dir = root / "downloads"
        self.uploads_dir = root / "uploads"
        self.max_download_bytes = max_download_bytes
        self.max_downloads = max_downloads
        self.downloads: dict[str, Download] = {}  # oldest first
        self._uploads = 0

    @property
    def index_path(self) -> Path:
        return self.downloads_dir / "index.json"

    def load(self) -> None:
        try:
            items = json.loads(self.index_path.read_text()).get("downloads", [])
        except (OSError, ValueError, AttributeError):
            return
        for item in items:
            try:
                download = Download(str(item["id"]), str(item["name"]), int(item["size"]), str(item["state"]))
            except (KeyError, TypeError, ValueError):
                continue
            if download.state == "started":
                download.state = "failed"  # the browser that fetched it is gone
            self.downloads[download.id] = download

    def index(self) -> dict[str, object]:
        return {"version": 1, "downloads": [d.describe() for d in self.downloads.values()]}

    def save_index(self) -> None:
        self.downloads_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_json_atomically(self.index_path, self.index())

    def path(self, download_id: str) -> Path | None:
        download = self.downloads.get(download_id)
        if download is None or download.state != "done" or not re.fullmatch(r"[A-Za-z0-9-]{1,64}", download_id):
            return None
        return self.downloads_dir / download_id

    # -- what the browser reports (pure bookkeeping; returns what to tell and what to do) -----------------

    def started(self, download_id: str, name: str) -> tuple[Download, list[str]]:
        """A new download; returns it and the ids of old ones removed to stay within the count limit (their
        files are the caller's to delete)."""
        download = Download(download_id, safe_name(name, "download"), 0, "started")
        self.downloads[download_id] = download
        evicted = []
        while len(self.downloads) > self.max_downloads:
            oldest = next(iter(self.downloads))
            del self.downloads[oldest]
            evicted.append(oldest)
        return download, evicted

    def progressed(self, download_id: str, received: int, state: str) -> tuple[Download | None, bool]:
        """Progress of a download: (the download when its public state changed, whether to cancel it)."""
        download = self.downloads.get(download_id)
        if download is None or download.state != "started":
            return None, False
        download.size = received
        if state == "progress":
            if received > self.max_download_bytes:
                download.state = "failed"
                return download, True
            return None, False
        download.state = "done" if state == "completed" else "failed"
        return download, False

    # -- uploads ------------------------------------------------------------------------------------------

    def upload_folder(self) -> Path:
        """A new folder for one file chooser's answer (names from the viewer's machine may repeat)."""
        self._uploads += 1
        folder = self.uploads_dir / f"{self._uploads}"
        while folder.exists():
            self._uploads += 1
            folder = self.uploads_dir / f"{self._uploads}"
        folder.mkdir(parents=True, mode=0o700)
        return folder

    def remove_download_files(self, ids: list[str]) -> None:
        for download_id in ids:
            (self.downloads_dir / download_id).unlink(missing_ok=True)

    def purge(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


__all__ = ["Download", "FrameFiles", "safe_name"]
