"""A page's link to another application (`mailto:`, `slack://`, `zoommtg://`) opens nothing.

Chromium hands such a link to the desktop, or first asks "Open xdg-open?" in a dialog over the frame (any scheme but
a few such as `mailto:`), which the driver's input over DevTools cannot reach: the frame was stuck under it. Flags
and policies do not turn that dialog off. So:

- A listener in an isolated world of ours cancels navigations to schemes the web does not have, before Chromium
  sees them: a link's click (capture phase, so a page's own handlers cannot stop it reaching us) and any other
  navigation of the document (the Navigation API's `navigate`: script, forms).
- What still gets through (a scheme Chromium launches without asking, as `mailto:`) finds our own `xdg-open` and
  `xdg-email` first on Chromium's PATH, which do nothing but note, for tests, that something asked (one short file,
  overwritten: the link itself is not kept). The system's `xdg-open` started Firefox on the frame's display, over
  the frame and out of the driver's reach, with its own profile and no allow list (checked with a `mailto:` link).
"""

from __future__ import annotations

from pathlib import Path

LAUNCHERS = ("xdg-open", "xdg-email")
WORLD = "framestream-links"
ATTEMPT_FILE = "last-attempt"

_STUB = """#!/bin/sh
# framestream (browser/external_apps.py): a page's link to another application opens nothing.
printf '%s\\n' "${0##*/}" > "$(dirname "$0")/ATTEMPT_FILE"
exit 0
""".replace("ATTEMPT_FILE", ATTEMPT_FILE)


def no_external_apps(profile_dir: Path) -> Path:
    """The folder (in the profile, made or mended at each launch) to put first on Chromium's PATH."""
    folder = profile_dir / "external-apps"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in LAUNCHERS:
        stub = folder / name
        if not stub.is_file() or stub.read_text() != _STUB:
            stub.write_text(_STUB)
        stub.chmod(0o700)
    return folder


# Schemes a document may navigate to; any other is another application's.
_SCRIPT = """(() => {
  const WEB = new Set(['http:', 'https:', 'about:', 'blob:', 'data:', 'javascript:', 'file:', 'filesystem:']);
  const elsewhere = (url) => {
    try { return !WEB.has(new URL(url, document.baseURI).protocol); } catch (e) { return false; }
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
})();"""


def script() -> str:
    """The isolated world's script (Page.addScriptToEvaluateOnNewDocument with `worldName` WORLD)."""
    return _SCRIPT


__all__ = ["ATTEMPT_FILE", "LAUNCHERS", "WORLD", "no_external_apps", "script"]
