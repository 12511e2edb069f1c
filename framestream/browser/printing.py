"""Printing never puts a dialog over a frame.

`window.print()` and the PDF viewer's print button open Chromium's print preview over the whole frame, out of reach
of input over DevTools (that goes to the page's target), while the page waits for it: the next click went unanswered
("Input.dispatchMouseEvent: no answer within 5 s") and the dialog stayed (checked; closing its target left an empty
dialog and the page still waiting). So Chromium prints without a preview (`--kiosk-printing`: straight to the
default destination, Save as PDF) into a folder that cannot exist: the print fails at once and quietly, and the page
goes on (`window.print()` returned in 0.6 s, nothing written). Without that folder the PDF went to ~/Downloads,
outside the state dir, once a print: a page printing in a loop would fill the disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PRINT_FLAGS = ("--kiosk-printing",)
NOWHERE = "/dev/null/prints"  # under a character device: no directory can be made there


def pin_print_folder(profile_dir: Path) -> None:
    """Point the profile's folder for saved files (Default/Preferences, read at launch) at NOWHERE, keeping the
    rest of its preferences; unreadable ones are replaced (Chromium would reset them too). Downloads are unaffected:
    their folder is the frame's own, set over DevTools (browser/tabs.py)."""
    path = profile_dir / "Default" / "Preferences"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        prefs: Any = json.loads(path.read_text())
    except (OSError, ValueError):
        prefs = {}
    if not isinstance(prefs, dict):
        prefs = {}
    saving = prefs.get("savefile")
    if not isinstance(saving, dict):
        saving = prefs["savefile"] = {}
    if saving.get("default_directory") == NOWHERE:
        return
    saving["default_directory"] = NOWHERE
    path.write_text(json.dumps(prefs))


__all__ = ["NOWHERE", "PRINT_FLAGS", "pin_print_folder"]
