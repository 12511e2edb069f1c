"""FRAMESTREAM_CHROME_SANDBOX: when framestream passes --no-sandbox to Chromium (never silently, never by guess)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from framestream.browser import chrome
from framestream.browser.chrome import SANDBOX_ENV, chrome_flags, sandbox_decision
from framestream.core.errors import BrowserError
from tests.deploy.files import REPO


@pytest.mark.parametrize(("mode", "euid", "sandbox"), [
    (None, 1000, True), ("", 1000, True), ("auto", 1000, True), ("on", 1000, True), (" On ", 1000, True),
    ("off", 1000, False), ("OFF", 1000, False),
    (None, 0, False), ("auto", 0, False), ("off", 0, False),
])
def test_sandbox_decision(mode: str | None, euid: int, sandbox: bool) -> None:
    decided, reason = sandbox_decision(mode, euid)
    assert decided is sandbox
    assert reason  # always something to log


def test_on_as_root_fails_instead_of_weakening() -> None:
    with pytest.raises(BrowserError, match="cannot use its sandbox as root"):
        sandbox_decision("on", 0)


@pytest.mark.parametrize("mode", ["yes", "1", "true", "disabled"])
def test_unknown_modes_are_refused(mode: str) -> None:
    with pytest.raises(BrowserError, match=SANDBOX_ENV):
        sandbox_decision(mode, 1000)


def test_no_sandbox_flag_follows_the_decision(tmp_path: Path) -> None:
    assert "--no-sandbox" not in chrome_flags(tmp_path, 800, 600, 1, sandbox=True)
    assert "--no-sandbox" in chrome_flags(tmp_path, 800, 600, 1, sandbox=False)


def test_running_without_the_sandbox_is_logged_as_a_warning_once(caplog: pytest.LogCaptureFixture,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chrome, "_sandbox_logged", set())
    with caplog.at_level(logging.INFO, logger="framestream.browser.chrome"):
        chrome._log_sandbox(False, "FRAMESTREAM_CHROME_SANDBOX=off")
        chrome._log_sandbox(False, "FRAMESTREAM_CHROME_SANDBOX=off")
        chrome._log_sandbox(True, "uid 1000, FRAMESTREAM_CHROME_SANDBOX=auto")
    records = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert records == [
        (logging.WARNING, "Chromium sandbox: OFF (FRAMESTREAM_CHROME_SANDBOX=off): a compromised page renderer gets "
                          "this user's access"),
        (logging.INFO, "Chromium sandbox: on (uid 1000, FRAMESTREAM_CHROME_SANDBOX=auto)"),
    ]


def test_the_setting_is_documented() -> None:
    image_readme = (REPO / "sandbox-image" / "README.md").read_text()
    assert f"`{SANDBOX_ENV}`" in image_readme
    readme = (REPO / "README.md").read_text()
    assert f"| `{SANDBOX_ENV}` |" in readme, f"README.md's environment table has no row for {SANDBOX_ENV}"
