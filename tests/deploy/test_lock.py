"""The lock files pin every dependency pyproject.toml names, at a version it allows, with hashes.

`make venv` and the image install only what the locks pin (`--require-hashes`, then the package with
`--no-deps`), so a dependency added to pyproject.toml without `make lock` would be missing at run time.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", re.M)


def pins(lock: str) -> dict[str, str]:
    text = (ROOT / lock).read_text()
    found = {canonicalize_name(m.group(1)): m.group(2) for m in PIN.finditer(text)}
    named = re.findall(r"^([A-Za-z0-9_.-]+)==", text, re.M)
    assert len(found) == len(named), f"{lock}: every pin carries its hashes"
    return found


def requirements(extra: str | None) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return [Requirement(r) for r in names]


@pytest.mark.parametrize(("lock", "extras"), [("requirements.lock", [None]),
                                              ("requirements-dev.lock", [None, "dev"])])
def test_every_dependency_is_pinned_at_an_allowed_version(lock: str, extras: list[str | None]) -> None:
    pinned = pins(lock)
    for extra in extras:
        for req in requirements(extra):
            version = pinned.get(canonicalize_name(req.name))
            assert version is not None, f"{req.name} is not in {lock}: run `make lock`"
            assert req.specifier.contains(version, prereleases=True), f"{lock} pins {req.name}=={version}: not {req}"


def test_the_runtime_lock_holds_no_development_tools() -> None:
    runtime = pins("requirements.lock")
    for req in requirements("dev"):
        assert canonicalize_name(req.name) not in runtime, f"{req.name} is a development tool"


def test_the_dev_lock_pins_the_pip_that_installs_it() -> None:
    """`make venv` installs the lock's own pip before the lock (Makefile): the pip a venv starts with may not read
    the lock's stripped extras right."""
    assert "pip" in pins("requirements-dev.lock")
