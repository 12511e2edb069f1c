"""One Chromium per frame, on the frame's display, with its own profile; DevTools over a pair of pipes only.

We launch at about:blank and navigate over DevTools, so an unloadable URL comes back as an error we can
report instead of a silent error page; the about:blank entry is then dropped from the page's history, so Back
never leaves the frame's own pages. The browser-level DevTools socket carries one flattened session per page
(`tabs.Tabs`); closing the browser goes through `Browser.close` first so the profile is flushed. That connection is
`--remote-debugging-pipe` (browser/cdp.py), never a TCP port: a port on 127.0.0.1 let a driver open DevTools'
inspector in the frame itself, and any local user drive every browser (issue 32, #1 and #2).

Chromium's own sandbox (`FRAMESTREAM_CHROME_SANDBOX`, see `sandbox_decision`) is never dropped silently: as an
unprivileged user it is on unless the operator says `off`, and every way of running without it is logged as a
warning. As a non-root user it needs unprivileged user namespaces (or Chromium's setuid helper, which the sandbox
image does not install and no-new-privileges would disable); sandbox-image/entrypoint.sh checks for them first.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from framestream.browser.cdp import CDPConnection
from framestream.browser.external_apps import no_external_apps
from framestream.browser.preferences import PRINT_FLAGS, pin_preferences
from framestream.browser.prints import prints_folder
from framestream.browser.process import group_ended, spawn, terminate_group
from framestream.browser.proctable import list_processes
from framestream.browser.tab_events import TabEvent, TabSettings
from framestream.browser.tabs import Tabs
from framestream.core.errors import BrowserError, CDPError

log = logging.getLogger(__name__)

START_TIMEOUT = 30.0
SINGLETON_FILES = ("SingletonLock", "SingletonSocket", "SingletonCookie")
SANDBOX_ENV = "FRAMESTREAM_CHROME_SANDBOX"
SANDBOX_MODES = ("auto", "on", "off")
NO_SANDBOX_HINT = (
    "Chromium found no usable sandbox: as a non-root user it needs unprivileged user namespaces, which this "
    "system or container forbids (a seccomp profile, AppArmor, or the user.max_user_namespaces sysctl). "
    f"Allow them, or set {SANDBOX_ENV}=off to run Chromium without its sandbox (weaker: see sandbox-image/README.md)"
)
_sandbox_logged: set[str] = set()


def sandbox_decision(mode: str | None, euid: int) -> tuple[bool, str]:
    """Whether Chromium runs with its sandbox, and why (for the log); BrowserError for a setting we refuse.

    `auto` (the default): on for an unprivileged user; off as root, where Chromium refuses to start with it.
    `on`: always on; as root that is impossible, so the launch fails instead of weakening.
    `off`: never (`--no-sandbox`), only because the operator asked.
    """
    value = (mode or "auto").strip().lower()
    if value not in SANDBOX_MODES:
        raise BrowserError(f"{SANDBOX_ENV}={mode!r} must be one of {', '.join(SANDBOX_MODES)}")
    if value == "off":
        return False, f"{SANDBOX_ENV}=off"
    if euid == 0:
        if value == "on":
            raise BrowserError(f"{SANDBOX_ENV}=on, but Chromium cannot use its sandbox as root: "
                               "run framestream as an unprivileged user")
        return False, f"running as root ({SANDBOX_ENV}=auto; Chromium refuses its sandbox as root)"
    return True, f"uid {euid}, {SANDBOX_ENV}={value}"


def _log_sandbox(sandbox: bool, reason: str) -> None:
    if reason in _sandbox_logged:
        return
    _sandbox_logged.add(reason)
    if sandbox:
        log.info("Chromium sandbox: on (%s)", reason)
    else:
        log.warning("Chromium sandbox: OFF (%s): a compromised page renderer gets this user's access", reason)


# What a frame's browser does not need, measured one at a time on a paused frame at 1280x800 dpr 2 (PSS; see
# docs/performance.md "Memory"). tests/integration/test_density.py fails if a Chromium update ignores them.
MEMORY_FEATURES_OFF = (
    # The address-bar popup is a WebUI page preloaded in a renderer of its own, even in kiosk mode where there is
    # no address bar: -50 MB.
    "WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup",
    # Site isolation keeps a spare renderer warm for the next navigation: -5 to -9 MB; a navigation to a new
    # site starts its renderer then instead (tens of ms, once).
    "SpareRendererForSitePerProcess",
    # Pages kept alive for Back: a frame's history steps are rare and a reload is fine for them.
    "BackForwardCache",
)
MEMORY_FLAGS = (
    # The network service in the browser process instead of a process of its own: -19 MB. A crash of it then
    # takes the browser down, which the frame's watchdog relaunches like any browser crash.
    "--enable-features=NetworkServiceInProcess2",
)


# localStorage on disk 1 s after a write (not 5 s or, rate-limited, minutes): the storage service's commit at a close
# may not outlive the browser's exit (docs/architecture.md, "Processes are owned"), so `ChromeBrowser.close` stops
# the page and waits this long after it last ran: the commit timer, then its write. As Android's WebView does.
STORAGE_FLUSH_FLAG = "--enable-aggressive-domstorage-flushing"
STORAGE_WRITTEN_S = 1.5


def chrome_flags(profile_dir: Path, width: int, height: int, dpr: int, *, sandbox: bool, webgl: bool = True
                 ) -> list[str]:
    flags = [
        f"--user-data-dir={profile_dir}",
        "--remote-debugging-pipe",  # commands on fd 3, answers and events on fd 4 (browser/cdp.py)
        "--kiosk",
        "--window-position=0,0",
        # In CSS pixels: with a forced scale factor Chromium reads the window size in DIPs.
        f"--window-size={width // dpr},{height // dpr}",
        f"--force-device-scale-factor={dpr}",
        "--force-color-profile=srgb",  # pixels on the display are the page's sRGB values
        "--ozone-platform=x11",
        # Xvfb has no GPU. WebGL renders through SwiftShader (CPU) in the GPU process and is read back into
        # software compositing, which stays cheapest either way: compositing a 2560x1600 window through
        # SwiftShader held an animated page to 12 fps at 0.59 vCPU of Chromium (28.5 fps, 0.12 in software) and
        # the GPU process to 135 MB PSS paused (44). Without WebGL the GPU process has nothing to do at all.
        *(("--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-gpu-compositing",
           "--disable-gpu-rasterization") if webgl else ("--disable-gpu",)),
        # No permission prompt ever covers a shared page: what is granted is decided by policy (Tabs).
        "--deny-permission-prompts",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-breakpad",
        "--disable-client-side-phishing-detection",
        "--disable-hang-monitor",
        "--disable-session-crashed-bubble",
        "--hide-crash-restore-bubble",
        "--noerrdialogs",
        "--disable-infobars",
        "--password-store=basic",
        "--use-mock-keychain",
        "--metrics-recording-only",
        # A shared page is always "visible" to its viewers even though nothing looks at the X window.
        "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows",
        "--disable-background-timer-throttling",
        "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,"
        "CalculateNativeWinOcclusion,DialMediaRouteProvider," + ",".join(MEMORY_FEATURES_OFF),
        *MEMORY_FLAGS,
        STORAGE_FLUSH_FLAG,
        "--lang=en-US",
        "--test-type",  # no "unsupported flag" infobar over the page
        *PRINT_FLAGS,  # no print preview over the frame (browser/preferences.py)
    ]
    if not sandbox:
        flags.append("--no-sandbox")
    return flags


def prepare_profile(profile_dir: Path) -> list[str]:
    """Create the profile (0700: cookies and storage are the page's secrets), pin the preferences that keep the
    browser's own UI off the frame (browser/preferences.py), and clear stale locks."""
    profile_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(profile_dir, 0o700)
    pin_preferences(profile_dir)
    return clear_stale_locks(profile_dir)


def clear_stale_locks(profile_dir: Path) -> list[str]:
    """Remove Singleton* files a killed Chromium left behind (they make the next launch exit at once)."""
    removed = []
    for name in SINGLETON_FILES:
        path = profile_dir / name
        if path.is_symlink() or path.exists():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(name)
    return removed



_PRESENTED_WAIT_MS = 500


def _painted_js(frames: int) -> str:
    """A promise resolved after `frames` animation frames, once the page's first paint was presented."""
    return f"""new Promise(done => {{
  let left = {frames};
  const presented = () => {{
    if (performance.getEntriesByType('paint').length) return done();
    const observer = new PerformanceObserver(() => {{ observer.disconnect(); done(); }});
    observer.observe({{type: 'paint'}});
    setTimeout(() => {{ observer.disconnect(); done(); }}, {_PRESENTED_WAIT_MS});
  }};
  const frame = () => --left > 0 ? requestAnimationFrame(frame) : presented();
  requestAnimationFrame(frame);
}})"""


class ChromeBrowser:
    def __init__(self, proc: asyncio.subprocess.Process, cdp: CDPConnection, tabs: Tabs, profile_dir: Path) -> None:
        self.proc = proc
        self.cdp = cdp
        self.tabs = tabs
        self.profile_dir = profile_dir
        self._frozen: list[int] = []
        self._frozen_at: float | None = None  # time.monotonic() when freeze_page stopped the page

    @property
    def session_id(self) -> str:
        """The DevTools session of the active page (the one on screen)."""
        return self.tabs.active.session_id

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    async def launch(
        cls,
        *,
        chrome_path: str,
        display: str,
        xauthority: Path | None = None,
        profile_dir: Path,
        width: int,
        height: int,
        dpr: int,
        tab_settings: TabSettings | None = None,
        on_event: Callable[[TabEvent], None] = lambda event: None,
        webgl: bool = True,
    ) -> ChromeBrowser:
        removed = prepare_profile(profile_dir)
        if removed:
            log.info("removed stale %s from %s", ", ".join(removed), profile_dir)
        with contextlib.suppress(FileNotFoundError):
            (profile_dir / "DevToolsActivePort").unlink()  # (left by a version that listened on a port)
        sandbox, reason = sandbox_decision(os.environ.get(SANDBOX_ENV), os.geteuid())
        _log_sandbox(sandbox, reason)
        # Chromium's ends of the two pipes must be its fds 3 and 4: bash moves them there and execs it (same pid;
        # bash, since dash takes only one-digit fds in a redirection).
        commands, answers = _pipe_above(10), _pipe_above(10)  # (read, write) each
        argv = ["bash", "-c", f'exec "$0" "$@" 3<&{commands[0]} 4>&{answers[1]} {commands[0]}<&- {answers[1]}>&-',
                chrome_path, *chrome_flags(profile_dir, width, height, dpr, sandbox=sandbox, webgl=webgl),
                "about:blank"]
        env = {"DISPLAY": display}  # on top of the allow-listed environment (browser/process.py)
        # Links to other applications open nothing (browser/external_apps.py).
        env["PATH"] = f"{no_external_apps(profile_dir)}:{os.environ.get('PATH', os.defpath)}"
        if xauthority is not None:
            env["XAUTHORITY"] = str(xauthority)  # its own display's cookie only (browser/xauth.py)
        log_path = profile_dir.parent / f"{profile_dir.name}.chrome.log"
        try:
            proc = await spawn(argv, env=env, log_path=str(log_path), pass_fds=(commands[0], answers[1]))
        except OSError as exc:
            for fd in (*commands, *answers):
                os.close(fd)
            raise BrowserError(f"cannot start Chromium ({chrome_path}): {exc}") from exc
        finally:
            for fd in (commands[0], answers[1]):  # the child's now
                with contextlib.suppress(OSError):
                    os.close(fd)
        try:
            cdp = await CDPConnection.over_pipes(answers[0], commands[1])
            await _until_answering(proc, cdp)
            settings = replace(tab_settings or TabSettings(width, height, dpr, profile_dir.parent / "downloads"),
                               prints_dir=prints_folder(profile_dir))  # (browser/preferences.py points there)
            tabs = Tabs(cdp, settings, on_event)
            try:
                await tabs.start()
                browser = cls(proc, cdp, tabs, profile_dir)
            except BaseException:
                await tabs.close()
                await cdp.close()
                raise
        except (TimeoutError, CDPError, BrowserError, OSError) as exc:
            await terminate_group(proc, grace=2.0)
            if sandbox and _no_usable_sandbox(log_path):
                raise BrowserError(NO_SANDBOX_HINT) from exc
            raise BrowserError(f"Chromium did not come up: {exc or 'timed out'}") from exc
        return browser

    async def call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
                   ) -> dict[str, Any]:
        """A DevTools call on the active page."""
        return await self.tabs.call(method, params, timeout=timeout)

    async def navigate(self, url: str, *, timeout: float = 30.0) -> str | None:
        """Navigate the active page and wait for the load; returns Chrome's error text (net::ERR_...) or None."""
        return await self.tabs.navigate(url, timeout=timeout)

    async def evaluate(self, expression: str, *, timeout: float = 10.0) -> Any:
        result = await self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            raise CDPError(f"evaluate failed: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    async def painted(self, *, timeout: float, frames: int = 2) -> None:
        """Until the active page has drawn `frames` animation frames since the call and its first paint is on the
        screen: the callback of a second requestAnimationFrame runs only after the frame of the first was produced,
        but a busy machine can present it to X later still (a reopened page's first keyframe showed the blank
        window). Chromium adds the `paint` timing entries once their frame is presented, so when there is none
        yet, wait for one, at most `_PRESENTED_WAIT_MS` (a page that paints only the default white never gets one).
        A page already painted has no such entry to wait for: `frames` then covers what lies between a frame's
        animation callbacks and its presentation (`Runtime.painted`). Gives up quietly after `timeout` (a page
        whose script is busy, a hidden page)."""
        with contextlib.suppress(CDPError, TimeoutError):
            await self.evaluate(_painted_js(frames), timeout=timeout)

    def child_pids(self, *types: bytes) -> list[int]:
        """This browser's child processes of the given `--type=` values, found in our own process group."""
        wanted = tuple(b"--type=" + t + b" " for t in types)
        return [info.pid for info in list_processes()
                if info.pgrp == self.proc.pid and any(w in info.cmdline.replace(b"\0", b" ") + b" " for w in wanted)]

    def freeze_page(self) -> None:
        """Freeze the page: SIGSTOP its renderers (state intact, no CPU, resumes painting at once) and the GPU
        process, whose display compositor would otherwise keep ticking for a page that cannot draw. The browser
        process keeps running: it answers DevTools (the heartbeat) and holds the profile."""
        self._frozen = self.child_pids(b"renderer", b"gpu-process")
        for pid in self._frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        self._frozen_at = time.monotonic()

    def thaw_page(self) -> None:
        for pid in self._frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        self._frozen, self._frozen_at = [], None

    async def close(self, *, grace: float = 10.0, keep_storage: bool = True) -> None:
        """Close gracefully (Browser.close flushes cookies and prefs), then make sure it is gone. `keep_storage`
        (not for a profile about to be deleted): the page stopped first, for what it last wrote to localStorage to
        reach the disk (STORAGE_FLUSH_FLAG): up to STORAGE_WRITTEN_S, none for a page paused that long ago."""
        if keep_storage and self.proc.returncode is None:
            if self._frozen_at is None:
                self.freeze_page()
            assert self._frozen_at is not None
            if (left := self._frozen_at + STORAGE_WRITTEN_S - time.monotonic()) > 0:
                await asyncio.sleep(left)
        self.thaw_page()
        await self.tabs.close()
        # A browser stopped from outside (SIGSTOP) cannot close itself: let it run again so it can flush.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGCONT)
        if self.proc.returncode is None and not self.cdp.closed:
            with contextlib.suppress(CDPError):
                await self.cdp.call("Browser.close", timeout=3.0)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await self.proc.wait()
            if self.proc.returncode is not None:
                await group_ended(self.proc.pid, within=3.0)  # its storage service may still be writing
        await self.cdp.close()
        await terminate_group(self.proc, grace=2.0)


def _no_usable_sandbox(log_path: Path) -> bool:
    """Did Chromium exit because neither the namespace nor the setuid sandbox works here?"""
    try:
        with open(log_path, "rb") as fh:
            return b"No usable sandbox" in fh.read(256 * 1024)
    except OSError:
        return False


def _pipe_above(lowest: int) -> tuple[int, int]:
    """A pipe whose two fds are at least `lowest` (so the shell's `3<&N` never moves a fd onto itself)."""
    ends = os.pipe()
    try:
        return (fcntl.fcntl(ends[0], fcntl.F_DUPFD_CLOEXEC, lowest),
                fcntl.fcntl(ends[1], fcntl.F_DUPFD_CLOEXEC, lowest))
    finally:
        for fd in ends:
            os.close(fd)


async def _until_answering(proc: asyncio.subprocess.Process, cdp: CDPConnection) -> None:
    """Until the browser answers over its pipe (it reads our first call once it is up); BrowserError if it exits."""
    answered = asyncio.ensure_future(cdp.call("Browser.getVersion", timeout=START_TIMEOUT))
    exited = asyncio.ensure_future(proc.wait())
    try:
        await asyncio.wait((answered, exited), return_when=asyncio.FIRST_COMPLETED)
        if not answered.done():
            raise BrowserError(f"Chromium exited with code {proc.returncode} during start")
        answered.result()
    finally:
        answered.cancel()
        exited.cancel()


__all__ = ["SANDBOX_ENV", "SANDBOX_MODES", "ChromeBrowser", "chrome_flags", "clear_stale_locks", "sandbox_decision"]
