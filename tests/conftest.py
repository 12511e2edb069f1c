from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import page_server


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [tool for tool in ("Xvfb", "chromium") if shutil.which(tool) is None]
    if not missing:
        return
    # Never silently: integration tests need the real parts; `make test` installs them.
    raise pytest.UsageError(f"integration tests need {', '.join(missing)}: run `make test`, which installs them")


@pytest.fixture(scope="session")
def pages() -> Iterator[str]:
    with page_server() as base:
        yield base


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path
