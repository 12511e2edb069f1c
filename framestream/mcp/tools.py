"""Computer-use tools on the frames of one sandbox, as plain async methods (the MCP server wraps them).

`ComputerTools` holds the sandbox key and one `framestream.client.Client`: every step is sent under a one-step
grant minted for it, so the model never sees a token. An action can return the picture after the page settled
(PNG at the frame's CSS size, so the model's coordinates are the page's). Refusals come back as `ToolRefusal`
with a plain sentence; a superseded or taken-over step is reported, never retried. `ask_human` asks a person to take
the frame over and waits for their note.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from framestream.client import (
    BadInput,
    Client,
    ClientError,
    ConnectionLost,
    DialogOpen,
    Download,
    Expired,
    Forbidden,
    FrameInfo,
    FrameView,
    RateLimited,
    SandboxKey,
    ServiceError,
    Superseded,
    TakenOver,
    UnknownFrame,
    Unresponsive,
)
from framestream.mcp.page_news import (
    active_page,
    dialog_to_answer,
    new_pages_loading,
    news,
    page_ids,
    pages_listing,
)

__all__ = ["MAX_READ_BYTES", "ComputerTools", "StepOutcome", "ToolRefusal"]

T = TypeVar("T")
PageAction = Literal["activate", "close", "reload"]
# An agent works in bursts of steps: a frame it looked at stays watched this long after its last picture (no
# re-watch per step), then is let go so it can pause like any frame nobody watches.
WATCH_GRACE_S = 30.0
NEW_PAGE_URL_WAIT_S = 3.0  # at most, for the URL of a page a step opened (a slow server: the answer says no URL)
MAX_READ_BYTES = 8 * 1024 * 1024  # a file read_download hands a model (a larger one is refused, with its size)


class ToolRefusal(Exception):
    """What the model reads when a tool could not do its job: one plain sentence."""


@dataclass(frozen=True)
class StepOutcome:
    text: str
    png: bytes | None  # the picture after the page settled, at CSS size (None when not asked)


class ComputerTools:
    """The tools' logic. `close()` ends its connection."""

    def __init__(self, url: str, key: SandboxKey, *, settle_ms: int = 300) -> None:
        self.url = url
        self.key = key
        self.settle_ms = settle_ms
        self._client: Client | None = None
        self._lock = asyncio.Lock()
        self._release: dict[str, asyncio.TimerHandle] = {}  # frame -> when its watch is let go
        self._releasing: set[asyncio.Task[None]] = set()

    async def client(self) -> Client:
        async with self._lock:
            if self._client is None:
                try:
                    # A key's client says hello as one who may drive: file choosers are told only to such.
                    self._client = await Client.connect(self.url, key=self.key)
                except (OSError, ClientError) as exc:
                    raise ToolRefusal(f"cannot reach framestream at {self.url}: {exc}") from exc
            return self._client

    async def close(self) -> None:
        for timer in self._release.values():
            timer.cancel()
        self._release.clear()
        for task in list(self._releasing):
            task.cancel()
        await asyncio.gather(*self._releasing, return_exceptions=True)
        if self._client is not None:
            await self._client.close()
            self._client = None

    # -- reading ------------------------------------------------------------------------------------------------

    async def list_frames(self) -> str:
        frames = await self._call(lambda c: c.list_frames())
        return json.dumps([_describe(f) for f in frames])

    async def screenshot(self, frame: str | None) -> StepOutcome:
        """The frame's picture (a fresh grab) and what it cannot show: an open dialog or file chooser, which takes
        the next step otherwise refused. Watched first: a viewer that joins hears the open ones right after the
        frame's state."""
        frame_id = await self.resolve(frame)
        view = await self._watched_state(frame_id)
        shot = await self._call(lambda c: c.screenshot(frame_id, css=True), frame_id)
        self._release_later(frame_id)
        said = news([], [], list(view.dialogs.values()), list(view.file_choosers.values()))
        return StepOutcome(". ".join(said), shot.png)

    async def wait_for_settle(self, frame: str | None, quiet_ms: int, timeout_s: float, picture: bool
                              ) -> StepOutcome:
        frame_id = await self.resolve(frame)
        png = await self._settled_png(frame_id, quiet_ms, timeout_s)
        return StepOutcome(f"frame {frame_id} has not changed for {quiet_ms} ms", png if picture else None)

    async def list_downloads(self, frame: str | None) -> str:
        frame_id = await self.resolve(frame)
        downloads = await self._call(lambda c: c.downloads(frame_id), frame_id)
        return json.dumps([{"download": d.id, "name": d.name, "size": d.size, "state": d.state} for d in downloads])

    async def read_download(self, frame: str | None, download: str) -> tuple[str, Download, bytes]:
        """The frame's id, a finished download of it (its id from list_downloads) and its bytes."""
        frame_id = await self.resolve(frame)
        listed = await self._call(lambda c: c.downloads(frame_id), frame_id)
        found = next((d for d in listed if d.id == download), None)
        if found is None:
            raise ToolRefusal(f"frame {frame_id} has no download {download!r}: list_downloads shows its downloads")
        if found.state != "done":
            raise ToolRefusal(f"the download {found.name!r} is {found.state}, not done: "
                              + ("look again in a moment" if found.state == "started" else "download it again"))
        if found.size > MAX_READ_BYTES:
            raise ToolRefusal(f"the download {found.name!r} is {found.size} bytes, more than the {MAX_READ_BYTES} "
                              "a tool returns")
        return frame_id, found, await self._call(lambda c: c.download(frame_id, download), frame_id)

    # -- steps ----------------------------------------------------------------------------------------------------

    async def step(self, frame: str | None, what: str, send: Callable[[Client, str], Awaitable[object]],
                   picture: bool) -> StepOutcome:
        """Send one step (a fresh grant is minted for it), then, if asked, the picture once the page settled. The
        answer tells what the picture cannot (page_news.py): a dialog or file chooser open, pages opened, closed or
        brought to the front, text the page copied."""
        frame_id = await self.resolve(frame)
        # Watched before the step: the stream shows its effect as it happens, and the frame's pages, dialogs and
        # choosers are known (each told as it opened: by now, once settled).
        view = await self._call(lambda c: c.watch(frame_id), frame_id)
        before, copies = _pages(view), view.copies
        await self._call(lambda c: send(c, frame_id), frame_id)
        png = await self._settled_png(frame_id, self.settle_ms, 10.0) if picture else None
        if new_pages_loading(before, _pages(view)):  # a page it opened is named by its URL once that is known
            with contextlib.suppress(TimeoutError):
                await view.wait_for(lambda v: not new_pages_loading(before, _pages(v)), NEW_PAGE_URL_WAIT_S)
        said = ". ".join([f"{what} on frame {frame_id}: done", *news(
            before, _pages(view), list(view.dialogs.values()), list(view.file_choosers.values()),
            view.clipboard if view.copies > copies else None)])
        if png is None:
            self._release_later(frame_id)
            return StepOutcome(said, None)
        return StepOutcome(f"{said}; the picture after it settled follows", png)

    async def choose_files(self, frame: str | None, paths: Sequence[str], picture: bool) -> StepOutcome:
        """Answer the frame's open file chooser (the newest) with files of this sandbox."""
        files = _files(paths)
        frame_id = await self.resolve(frame)
        view = await self._call(lambda c: c.watch(frame_id), frame_id)
        if not view.file_choosers:
            self._release_later(frame_id)
            raise ToolRefusal(f"frame {frame_id} has no open file chooser: click the page's file input (or its "
                              "upload button) first, or drop_files on its drop zone")
        chooser = list(view.file_choosers)[-1]
        return await self.step(frame_id, f"files {', '.join(p.name for p in files)} chosen",
                               lambda c, f: c.choose_files(f, chooser, files), picture)

    async def drop_files(self, frame: str | None, x: float, y: float, paths: Sequence[str], picture: bool,
                         ) -> StepOutcome:
        """Drop files of this sandbox on the page at (x, y), as a person's drag from their desktop."""
        files = _files(paths)
        return await self.step(frame, f"files {', '.join(p.name for p in files)} dropped at ({x:g}, {y:g})",
                               lambda c, f: c.drop_files(f, x, y, files), picture)

    async def list_pages(self, frame: str | None) -> str:
        """The frame's pages (tabs and popups): id, url, title, which is shown, whether it answers."""
        frame_id = await self.resolve(frame)
        view = await self._watched_state(frame_id)
        self._release_later(frame_id)
        return json.dumps(pages_listing(_pages(view)))

    async def page_action(self, frame: str | None, action: PageAction, page: str | None, picture: bool,
                          ) -> StepOutcome:
        """Show (`activate`), close or reload one of the frame's pages; reload without `page`: the one shown."""
        frame_id = await self.resolve(frame)
        view = await self._watched_state(frame_id)
        target = page or active_page(_pages(view))
        if target not in page_ids(_pages(view)):
            self._release_later(frame_id)
            listed = ", ".join(page_ids(_pages(view))) or "none while its browser is closed"
            raise ToolRefusal(f"frame {frame_id} has no page {target!r}; its pages: {listed} (list_pages)")
        what = {"activate": f"page {target} shown", "close": f"page {target} closed",
                "reload": f"page {target} reloaded"}[action]
        return await self.step(frame_id, what, lambda c, f: c.page(f, action, target), picture)

    async def answer_dialog(self, frame: str | None, accept: bool, text: str | None, picture: bool,
                            ) -> StepOutcome:
        """OK (`accept`) or Cancel the open dialog (the one on the page shown, else the oldest); `text` for a
        prompt's OK."""
        frame_id = await self.resolve(frame)
        view = await self._call(lambda c: c.watch(frame_id), frame_id)
        dialog = dialog_to_answer(list(view.dialogs.values()), _pages(view))
        if dialog is None:
            self._release_later(frame_id)
            raise ToolRefusal(f"frame {frame_id} has no open dialog")
        answer = ("OK" if accept else "Cancel") + (f" with text {text!r}" if accept and text is not None else "")
        return await self.step(frame_id, f"{dialog.get('kind', 'alert')} dialog answered {answer}",
                               lambda c, f: c.answer_dialog(f, str(dialog["id"]), accept,
                                                            text if accept else None), picture)

    async def ask_human(self, frame: str | None, reason: str, timeout_s: float) -> str:
        """Ask a person to take the frame over; their note once they hand it back, or that nobody came."""
        frame_id = await self.resolve(frame)
        note = await self._call(lambda c: c.request_help(frame_id, reason, timeout_s), frame_id)
        if note is None:
            return (f"nobody took over frame {frame_id} within {timeout_s:g} s; the page is as you left it. Try "
                    "another way, or ask again later.")
        said = f' and wrote: "{note}"' if note else " without a note"
        return f"the person handed frame {frame_id} back{said}. You drive again: look at the page before acting."

    # -- frames (control) ---------------------------------------------------------------------------------------

    async def open_frame(self, url: str, width: int, height: int, dpr: int | None) -> str:
        info = await self._call(lambda c: c.create_frame(url, width, height, dpr))
        return json.dumps(_describe(info))

    async def resize_frame(self, frame: str | None, width: int, height: int, dpr: int | None, picture: bool,
                           ) -> StepOutcome:
        """Give the frame a new CSS size: the picture once the page settled at it."""
        frame_id = await self.resolve(frame)
        asked_us = time.time_ns() // 1000
        info = await self._call(lambda c: c.resize_frame(frame_id, width, height, dpr), frame_id)
        said = f"frame {frame_id} is {info.width}x{info.height} CSS pixels at dpr {info.dpr}"
        if not picture:
            return StepOutcome(said, None)
        view = await self._call(lambda c: c.watch(frame_id), frame_id)
        size = (info.width * info.dpr, info.height * info.dpr)
        # The first picture of the new size (its video-config came before it): a settled picture from before
        # the change would show the page at its old size.
        await self._call(lambda _: view.picture_after(asked_us, lambda p: (p.width, p.height) == size, 30.0),
                         frame_id)
        return StepOutcome(said, await self._settled_png(frame_id, 300, 10.0))

    async def close_frame(self, frame: str) -> str:
        await self._call(lambda c: c.delete_frame(frame), frame)
        return f"frame {frame} closed"

    # -- helpers ------------------------------------------------------------------------------------------------

    async def resolve(self, frame: str | None) -> str:
        """The frame a tool acts on: the one named, or the sandbox's only frame."""
        if frame:
            return frame
        frames = await self._call(lambda c: c.list_frames())
        if len(frames) == 1:
            return frames[0].id
        if not frames:
            raise ToolRefusal("this sandbox has no frame (open_frame makes one)")
        raise ToolRefusal("name a frame: " + ", ".join(f.id for f in frames))

    async def _watched_state(self, frame: str) -> FrameView:
        """The frame's view, watched, once its state (and so its pages) is known."""
        view = await self._call(lambda c: c.watch(frame), frame)
        await self._call(lambda _: view.wait_for(lambda v: v.state is not None, 10.0), frame)
        return view

    async def _settled_png(self, frame: str, quiet_ms: int, timeout_s: float) -> bytes:
        """The stream's picture once the page settled, as PNG at the frame's CSS size. After a still period the
        newest picture is a refinement (re-encoded at a high quality), so no screenshot round trip is needed."""
        view = await self._call(lambda c: c.watch(frame), frame)
        try:
            picture = await view.settle(quiet=quiet_ms / 1000, timeout=timeout_s)
        except TimeoutError:
            raise ToolRefusal(f"frame {frame} kept changing for {timeout_s:g} s") from None
        config = view.config
        self._release_later(frame)
        if config is None:
            raise ToolRefusal(f"the connection to frame {frame} dropped; look again")
        return await asyncio.to_thread(picture.png, config.css_width, config.css_height)

    def _release_later(self, frame: str) -> None:
        """Unwatch `frame` WATCH_GRACE_S after its last picture (again later if the agent keeps looking)."""
        timer = self._release.pop(frame, None)
        if timer is not None:
            timer.cancel()

        def release() -> None:
            self._release.pop(frame, None)
            if self._client is not None:
                task = asyncio.ensure_future(self._unwatch(self._client, frame))
                self._releasing.add(task)
                task.add_done_callback(self._releasing.discard)

        self._release[frame] = asyncio.get_running_loop().call_later(WATCH_GRACE_S, release)

    @staticmethod
    async def _unwatch(client: Client, frame: str) -> None:
        try:
            await client.unwatch(frame)
        except (ClientError, OSError):
            pass  # the frame or the connection is gone: nothing is watched any more

    async def _call(self, action: Callable[[Client], Awaitable[T]], frame: str | None = None) -> T:
        client = await self.client()
        try:
            return await action(client)
        except ServiceError as exc:
            raise ToolRefusal(_plain(exc, frame)) from exc
        except ConnectionLost as exc:
            raise ToolRefusal(f"the connection to framestream dropped ({exc}); the step may not have been "
                              "applied: look again before acting") from exc
        except ClientError as exc:
            raise ToolRefusal(str(exc)) from exc


def _pages(view: FrameView) -> tuple[dict[str, Any], ...]:
    return view.state.pages if view.state is not None else ()


def _files(paths: Sequence[str]) -> list[Path]:
    """The files an upload tool names, each one that exists (a path that does not is named back)."""
    if not paths:
        raise ToolRefusal("name at least one file, by its path in this sandbox")
    files = [Path(p).expanduser() for p in paths]
    for file in files:
        if not file.is_file():
            raise ToolRefusal(f"no file at {str(file)!r} (give paths of files in this sandbox)")
    return files


def _describe(info: FrameInfo) -> dict[str, object]:
    return {"frame": info.id, "url": info.url, "state": info.state, "width": info.width, "height": info.height,
            "dpr": info.dpr, "driver": info.driver}


def _plain(exc: ServiceError, frame: str | None) -> str:
    name = f"frame {frame}" if frame else "the frame"
    if isinstance(exc, TakenOver):
        return (f"a person has taken over {name} and holds it; this step was not applied and will not be retried. "
                "Wait until they hand it back, or call ask_human to ask them and wait for their note.")
    if isinstance(exc, Superseded):
        return (f"a person has taken control of {name} (their drive grant is newer); this step was not applied "
                "and will not be retried. Wait until they are done, or ask them.")
    if isinstance(exc, UnknownFrame):
        return f"there is no {name}: list_frames shows the frames of this sandbox"
    if isinstance(exc, Forbidden):
        return f"not allowed on {name}: {exc.message}"
    if isinstance(exc, Expired):
        return "the grant expired before the service saw it (is this machine's clock right?)"
    if isinstance(exc, RateLimited):
        return "too many steps too fast: the step was not applied; slow down"
    if isinstance(exc, DialogOpen):
        return f"a dialog is open on {name}: answer it with answer_dialog first (the step was not applied)"
    if isinstance(exc, Unresponsive):
        return (f"the page shown on {name} does not answer (a script that never returns, perhaps started by this "
                "very step): reload_page ends it and loads the page again")
    if isinstance(exc, BadInput):
        return f"the step was refused: {exc.message}"
    return f"{exc.code}: {exc.message}"
