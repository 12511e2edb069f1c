"""What each launch pins in the profile's preferences so that the browser's own UI stays off the frame.

That UI is out of reach of the driver's input, which goes over DevTools to the page, and any viewer sees it:

- **Printing.** `window.print()` and the PDF viewer's print button opened the print preview over the whole frame,
  with the page waiting for it: the next click was an internal error after 5 s and the dialog stayed (closing its
  target left an empty dialog and the page still waiting). Chromium now prints without a preview (`PRINT_FLAGS`,
  straight to Save as PDF) into the profile's prints folder, and the page goes on (`window.print()` returned in
  0.6 s); each PDF moves from there into the frame's downloads, under their limits (browser/prints.py). Without a
  folder of ours each print went to ~/Downloads, outside the state dir: a page printing in a loop would fill it.
- **Saving passwords, addresses and cards.** After a login form was sent, the password manager's "Save password?"
  bubble covered 70 % of a 640x400 frame for good, the username in clear and an eye that shows the password.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from framestream.browser.prints import prints_folder

PRINT_FLAGS = ("--kiosk-printing",)

# (path of keys, value) in Default/Preferences; and where prints go (`pinned`).
PINNED: tuple[tuple[tuple[str, ...], object], ...] = (
    (("credentials_enable_service",), False),
    (("profile", "password_manager_enabled"), False),
    (("autofill", "profile_enabled"), False),
    (("autofill", "credit_card_enabled"), False),
)


def pinned(profile_dir: Path) -> tuple[tuple[tuple[str, ...], object], ...]:
    """PINNED, and Save as PDF into the profile's prints folder (browser/prints.py)."""
    return ((("savefile", "default_directory"), str(prints_folder(profile_dir))), *PINNED)


def pin_preferences(profile_dir: Path) -> None:
    """Set `pinned` in the profile's preferences (Default/Preferences, read at launch), keeping the rest of them;
    unreadable ones are replaced (Chromium would reset them too). Downloads keep the frame's own folder, set over
    DevTools (browser/tabs.py)."""
    path = profile_dir / "Default" / "Preferences"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        prefs: Any = json.loads(path.read_text())
    except (OSError, ValueError):
        prefs = {}
    if not isinstance(prefs, dict):
        prefs = {}
    changed = False
    for keys, value in pinned(profile_dir):
        node = prefs
        for key in keys[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        if node.get(keys[-1]) != value:
            node[keys[-1]] = value
            changed = True
    if changed:
        path.write_text(json.dumps(prefs))


__all__ = ["PINNED", "PRINT_FLAGS", "pin_preferences", "pinned"]
