"""A page's link to another application (`mailto:`, `slack://`, `zoommtg://`) opens nothing, and asks nothing.

Chromium hands such a link to the desktop, or first asks "Open xdg-open?" in a dialog over the frame (any scheme but
a few such as `mailto:`), which the driver's input over DevTools cannot reach: the frame was stuck under it. Flags
and policies do not turn that dialog off. So:

- A listener in an isolated world of ours cancels navigations to schemes the web does not have, before Chromium
  sees them: a link's click (capture phase, so a page's own handlers cannot stop it reaching us) and any other
  navigation of the document (the Navigation API's `navigate`: script, forms).
- What the listener cannot see (an iframe's `src`, whose first empty document fires no `navigate`; a popup opened at
  such a link) reaches Chromium, which first asks the desktop whether Chromium is itself the scheme's handler
  (`xdg-settings check default-url-scheme-handler`) and, if so, drops the link without asking the user, to avoid a
  loop. Our own `xdg-settings`, first on Chromium's PATH, says yes. Before it, the iframe's dialog stayed over the
  frame even after the frame navigated (checked).
- A popup opened at such a link would stay a blank page on top of the frame: browser/page_targets.py closes it as
  it comes (`is_another_application` on the `Page.windowOpen` that announced it).
- Our own `xdg-open` and `xdg-email` come first too and do nothing: the system's `xdg-open` started Firefox on the
  frame's display, over the frame and out of the driver's reach, with its own profile and no allow list (checked
  with a `mailto:` link, before `xdg-settings` answered). Each stub notes, for tests, that something asked (one
  short file, overwritten: the link itself is not kept).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

LAUNCHERS = ("xdg-open", "xdg-email")
HANDLER_CHECK = "xdg-settings"  # Chromium asks it whether Chromium is itself the default handler of a scheme
WORLD = "framestream-links"
ATTEMPT_FILE = "last-attempt"

# Schemes a document may navigate to; any other is another application's.
WEB_SCHEMES = frozenset(("http", "https", "about", "blob", "data", "javascript", "file", "filesystem"))

_LAUNCHER = """#!/bin/sh
# framestream (browser/external_apps.py): a page's link to another application opens nothing.
printf '%s\\n' "${0##*/}" > "$(dirname "$0")/ATTEMPT_FILE"
exit 0
""".replace("ATTEMPT_FILE", ATTEMPT_FILE)

# `check default-url-scheme-handler SCHEME chromium.desktop` says yes, so Chromium drops the link and asks no one;
# `get` (the handler's name, for the dialog) says nothing.
_HANDLER_CHECK = _LAUNCHER.replace("opens nothing.", "opens nothing and asks nothing.").replace(
    "exit 0", '[ "$1" = check ] && echo yes\nexit 0')


def no_external_apps(profile_dir: Path) -> Path:
    """The folder (in the profile, made or mended at each launch) to put first on Chromium's PATH."""
    folder = profile_dir / "external-apps"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stubs = {name: _LAUNCHER for name in LAUNCHERS} | {HANDLER_CHECK: _HANDLER_CHECK}
    for name, text in stubs.items():
        stub = folder / name
        if not stub.is_file() or stub.read_text() != text:
            stub.write_text(text)
        stub.chmod(0o700)
    return folder


def is_another_application(url: str) -> bool:
    """Whether a URL is a link to another application (a scheme the web does not have), as the script judges."""
    try:
        scheme = urlsplit(url).scheme
    except ValueError:
        return False
    return bool(scheme) and scheme.lower() not in WEB_SCHEMES


_SCRIPT = """(() => {
  const WEB = new Set(SCHEMES);
  const elsewhere = (url) => {
    try { return !WEB.has(new URL(url, document.baseURI).protocol.slice(0, -1)); } catch (e) { return false; }
  };
  addEventListener('click', (e) => {
    const link = e.composedPath().find((n) => n instanceof Element && n.hasAttribute('href') &&
                                             (n.localName === 'a' || n.localName === 'area'));
    if (link && elsewhere(link.href)) e.preventDefault();
  }, {capture: true});
  if (globalThis.navigation) {
    navigation.addEventListener('navigate', (e) => {
      if (e.cancelable && elsewhere(e.destination.url)) e.preventDefault();
    });
  }
})();""".replace("SCHEMES", json.dumps(sorted(WEB_SCHEMES)))


def script() -> str:
    """The isolated world's script (Page.addScriptToEvaluateOnNewDocument with `worldName` WORLD)."""
    return _SCRIPT


__all__ = ["ATTEMPT_FILE", "HANDLER_CHECK", "LAUNCHERS", "WEB_SCHEMES", "WORLD", "is_another_application",
           "no_external_apps", "script"]
