from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from framestream.client import Client, SandboxKey
from tests.beside import SHARED_DIR, Beside
from tests.support import TEST_SECRET, Service, StreamClient, page_server

_SHARED = pytest.StashKey[str]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    needs_browser = any(part in str(item.path) for item in items for part in ("integration", "/web/", "deploy"))
    missing = [tool for tool in ("Xvfb", "chromium") if shutil.which(tool) is None]
    if not missing or not needs_browser:
        return
    # Never silently: integration tests need the real parts; `make test` installs them.
    raise pytest.UsageError(f"integration tests need {', '.join(missing)}: run `make test`, which installs them")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The long namespace runs of the tests collected start now, beside the rest (tests/beside.py)."""
    if session.config.option.collectonly:
        return
    Beside.start({item.module.__name__ for item in session.items if isinstance(item, pytest.Function)})


def pytest_configure(config: pytest.Config) -> None:
    """An xdist session's controller makes the directory where one worker's runs beside leave their outcomes for
    the others (tests/beside.py); the workers inherit its name."""
    if getattr(config, "workerinput", None) is None and getattr(config.option, "numprocesses", None):
        config.stash[_SHARED] = os.environ[SHARED_DIR] = tempfile.mkdtemp(prefix="framestream-beside-")


def pytest_unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_SHARED, None)  # only by the controller that made it (a pytest run inside inherits it)
    if made is not None:
        os.environ.pop(SHARED_DIR, None)
        shutil.rmtree(made, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    Beside.stop(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)


@pytest.fixture(autouse=True)
async def close_stream_clients() -> AsyncIterator[None]:
    """Close every protocol client a test opened, even when the test failed before closing it."""
    yield
    while StreamClient.open_clients:
        await StreamClient.open_clients.pop().close()


@pytest.fixture(scope="session")
def pages() -> Iterator[str]:
    with page_server() as base:
        yield base


@pytest.fixture(scope="session")
def web_pages() -> Iterator[str]:
    """tests/web/pages on 127.0.0.1 (the pages the viewer tests' frames show; the React package's test too)."""
    with page_server(Path(__file__).parent / "web" / "pages") as base:
        yield base


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
def key() -> SandboxKey:
    """An agent's key to the test service's sandbox (framestream.client mints its grants with it)."""
    return SandboxKey(TEST_SECRET, "test", subject="agent")


@pytest.fixture
async def client(service: Service, key: SandboxKey) -> AsyncIterator[Client]:
    """The library as an agent's client of the module's service."""
    async with await Client.connect(service.base, key=key) as c:
        yield c
