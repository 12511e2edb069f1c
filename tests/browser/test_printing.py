"""Where a print would be saved (browser/printing.py): a folder that cannot exist, pinned in the profile's
preferences before each launch, the rest of them kept."""

from __future__ import annotations

import json
from pathlib import Path

from framestream.browser.printing import NOWHERE, pin_print_folder


def prefs(profile: Path) -> object:
    return json.loads((profile / "Default" / "Preferences").read_text())


def test_a_new_profile_gets_the_folder_and_nothing_else(tmp_path: Path) -> None:
    pin_print_folder(tmp_path)
    assert prefs(tmp_path) == {"savefile": {"default_directory": NOWHERE}}
    assert not Path(NOWHERE).parent.is_dir()  # /dev/null: nothing can be made under it


def test_a_profiles_own_preferences_stay_and_a_folder_it_chose_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "Default").mkdir()
    own = {"savefile": {"default_directory": "/root/Downloads", "type": 1}, "profile": {"name": "Person 1"}}
    (tmp_path / "Default" / "Preferences").write_text(json.dumps(own))
    pin_print_folder(tmp_path)
    assert prefs(tmp_path) == {"savefile": {"default_directory": NOWHERE, "type": 1}, "profile": {"name": "Person 1"}}


def test_unreadable_preferences_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "Default").mkdir()
    for broken in ("{not json", "[1, 2]", '{"savefile": "x"}'):
        (tmp_path / "Default" / "Preferences").write_text(broken)
        pin_print_folder(tmp_path)
        assert prefs(tmp_path)["savefile"] == {"default_directory": NOWHERE}  # type: ignore[index]
