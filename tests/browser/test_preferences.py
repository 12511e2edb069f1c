"""The preferences each launch pins (browser/preferences.py): prints saved to a folder that cannot exist, no offers to
save passwords, addresses or cards; the profile's other preferences kept."""

from __future__ import annotations

import json
from pathlib import Path

from framestream.browser.preferences import NOWHERE, pin_preferences


def prefs(profile: Path) -> object:
    return json.loads((profile / "Default" / "Preferences").read_text())


PINNED = {"savefile": {"default_directory": NOWHERE}, "credentials_enable_service": False,
          "profile": {"password_manager_enabled": False},
          "autofill": {"profile_enabled": False, "credit_card_enabled": False}}


def test_a_new_profile_gets_the_pins_and_nothing_else(tmp_path: Path) -> None:
    pin_preferences(tmp_path)
    assert prefs(tmp_path) == PINNED
    assert not Path(NOWHERE).parent.is_dir()  # /dev/null: nothing can be made under it


def test_a_profiles_own_preferences_stay_and_a_folder_it_chose_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "Default").mkdir()
    own = {"savefile": {"default_directory": "/root/Downloads", "type": 1}, "profile": {"name": "Person 1"}}
    (tmp_path / "Default" / "Preferences").write_text(json.dumps(own))
    pin_preferences(tmp_path)
    assert prefs(tmp_path) == {**PINNED, "savefile": {"default_directory": NOWHERE, "type": 1},
                               "profile": {"name": "Person 1", "password_manager_enabled": False}}


def test_unreadable_preferences_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "Default").mkdir()
    for broken in ("{not json", "[1, 2]", '{"savefile": "x"}'):
        (tmp_path / "Default" / "Preferences").write_text(broken)
        pin_preferences(tmp_path)
        assert prefs(tmp_path) == PINNED
