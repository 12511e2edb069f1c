"""What each launch sets up in the profile: the preferences it pins (browser/preferences.py: prints saved into the
profile's own prints folder, no offers to save passwords, addresses or cards; the profile's other preferences kept),
and the
launchers of other applications that open nothing, and the desktop's answer that Chromium handles every other
application's link itself, so it drops them asking no one (browser/external_apps.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from framestream.browser import external_apps
from framestream.browser.external_apps import ATTEMPT_FILE, HANDLER_CHECK, LAUNCHERS, no_external_apps
from framestream.browser.preferences import pin_preferences


def prefs(profile: Path) -> object:
    return json.loads((profile / "Default" / "Preferences").read_text())


def pins(profile: Path) -> dict[str, object]:
    return {"savefile": {"default_directory": str(profile / "prints")}, "credentials_enable_service": False,
            "profile": {"password_manager_enabled": False},
            "autofill": {"profile_enabled": False, "credit_card_enabled": False}}


def test_a_new_profile_gets_the_pins_and_nothing_else(tmp_path: Path) -> None:
    pin_preferences(tmp_path)
    assert prefs(tmp_path) == pins(tmp_path)  # prints go to the profile's own folder, never ~/Downloads


def test_a_profiles_own_preferences_stay_and_a_folder_it_chose_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "Default").mkdir()
    own = {"savefile": {"default_directory": "/root/Downloads", "type": 1}, "profile": {"name": "Person 1"}}
    (tmp_path / "Default" / "Preferences").write_text(json.dumps(own))
    pin_preferences(tmp_path)
    assert prefs(tmp_path) == {**pins(tmp_path), "savefile": {"default_directory": str(tmp_path / "prints"), "type": 1},
                               "profile": {"name": "Person 1", "password_manager_enabled": False}}


def test_unreadable_preferences_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "Default").mkdir()
    for broken in ("{not json", "[1, 2]", '{"savefile": "x"}'):
        (tmp_path / "Default" / "Preferences").write_text(broken)
        pin_preferences(tmp_path)
        assert prefs(tmp_path) == pins(tmp_path)


def test_the_launchers_chromium_finds_first_open_nothing_and_note_that_something_asked(tmp_path: Path) -> None:
    folder = no_external_apps(tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == sorted((*LAUNCHERS, HANDLER_CHECK))
    done = subprocess.run([str(folder / "xdg-email"), "mailto:ann@example.test"], capture_output=True, timeout=10,
                          env={"PATH": f"{folder}:/usr/bin:/bin"})
    assert done.returncode == 0 and done.stdout == b""
    assert (folder / ATTEMPT_FILE).read_text() == "xdg-email\n"  # which one, not the link
    assert no_external_apps(tmp_path) == folder  # again at the next launch: the same folder


def run_stub(folder: Path, *args: str) -> bytes:
    done = subprocess.run([str(folder / args[0]), *args[1:]], capture_output=True, timeout=10,
                          env={"PATH": f"{folder}:/usr/bin:/bin"}, check=True)
    return done.stdout


def test_chromium_hears_it_handles_every_scheme_itself_and_no_handler_name(tmp_path: Path) -> None:
    folder = no_external_apps(tmp_path)
    # As Chromium asks before it would show "Open xdg-open?" (a yes drops the link), then for the dialog's name.
    scheme = ("default-url-scheme-handler", "zoommtg", "chromium.desktop")
    assert run_stub(folder, HANDLER_CHECK, "check", *scheme) == b"yes\n"
    assert run_stub(folder, HANDLER_CHECK, "get", *scheme) == b""
    assert (folder / ATTEMPT_FILE).read_text() == f"{HANDLER_CHECK}\n"


@pytest.mark.parametrize(("url", "elsewhere"), [
    ("slack://open?team=T1", True), ("mailto:ann@example.test", True), ("zoommtg:join", True), ("MSTEAMS://x", True),
    ("https://example.test/", False), ("HTTP://example.test/", False), ("about:blank", False), ("blob:x", False),
    ("data:text/html,x", False), ("", False), ("/relative", False), ("http://[::1", False),
])
def test_a_link_to_another_application_is_one_whose_scheme_the_web_does_not_have(url: str, elsewhere: bool) -> None:
    assert external_apps.is_another_application(url) is elsewhere
