"""Runs beside the suite: the long runs in network namespaces of their own start with the session, one at a time in
a thread, while the rest of the suite runs; their tests take the outcome when pytest reaches them.

Each such run is a subprocess that mostly waits on a link (a 1 Mbit/s bucket watched past consent's 30 s, 10 s
windows of a slow viewer) and shares nothing with the suite but the CPU: no port, no display, no state directory.
In line they were about three of the suite's fifteen minutes. A test module declares its run when it is imported
(`Beside(lambda: ...)`); `outcome()` returns what the run returned or raises what it raised, and runs it there and
then when the session did not start it (a test run alone, or deselected by `-k` and selected again).

With pytest-xdist every worker collects every test, but a run's test goes to one worker, not known in advance. So
the session's runs go once, in one lane: the first worker to claim the lane (a file in `SHARED_DIR`, which the
controller makes) runs them all and writes each outcome there, pickled; a test on another worker reads it, waiting
for its file.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from tests import netns

T = TypeVar("T")

SHARED_DIR = "FRAMESTREAM_TEST_BESIDE_DIR"  # set by the controller of an xdist session (tests/conftest.py)


class Beside(Generic[T]):
    declared: ClassVar[list[Beside[Any]]] = []
    _lane: ClassVar[ThreadPoolExecutor | None] = None

    def __init__(self, run: Callable[[], T]) -> None:
        self._run = run
        self.module = run.__module__
        # The same in every worker: modules declare their runs in their own order.
        self.key = f"{self.module}.{sum(1 for b in Beside.declared if b.module == self.module)}"
        self._future: Future[T] | None = None
        self._written_to: Path | None = None  # another worker runs it and writes its outcome here
        Beside.declared.append(self)

    def outcome(self) -> T:
        if self._written_to is not None:
            return _read(self._written_to)  # type: ignore[no-any-return]
        if self._future is None:
            return self._run()
        return self._future.result()

    @classmethod
    def start(cls, modules: Iterable[str]) -> None:
        """Start, in declaration order, the runs declared by these modules (the modules whose tests were collected)."""
        wanted = set(modules)
        runs = [run for run in cls.declared if run.module in wanted and run._future is None]
        if not runs:
            return
        shared = os.environ.get(SHARED_DIR)
        if shared is not None and not _claim(Path(shared) / "lane"):
            for run in runs:
                run._written_to = Path(shared) / run.key
            return
        cls._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="beside")
        for run in runs:
            job = run._run if shared is None else _writing(run._run, Path(shared) / run.key)
            run._future = cls._lane.submit(job)

    @classmethod
    def stop(cls, *, interrupted: bool = False) -> None:
        """The session's end: drop runs not started, end the one going (by its process group), wait for the thread.
        When other workers may wait for this lane's outcomes, its runs finish first, unless the session was
        interrupted."""
        if cls._lane is None:
            return
        if interrupted or os.environ.get(SHARED_DIR) is None:
            cls._lane.shutdown(wait=False, cancel_futures=True)
            netns.end_all()
        cls._lane.shutdown(wait=True)
        cls._lane = None


def _claim(path: Path) -> bool:
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _writing(run: Callable[[], T], path: Path) -> Callable[[], T]:
    def job() -> T:
        try:
            value = run()
        except BaseException as exc:
            _write(path, (False, exc))
            raise
        _write(path, (True, value))
        return value
    return job


def _write(path: Path, outcome: tuple[bool, Any]) -> None:
    try:
        data = pickle.dumps(outcome)
    except Exception as exc:  # an outcome that does not pickle still reaches the reader, as its repr
        data = pickle.dumps((False, RuntimeError(f"the run beside's outcome did not pickle ({exc}): {outcome[1]!r}")))
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    partial.rename(path)  # whole or absent for the reader


def _read(path: Path) -> Any:
    """The outcome another worker writes to `path`, once it is there (the test's own timeout bounds the wait)."""
    while not path.exists():
        time.sleep(0.1)
    ok, value = pickle.loads(path.read_bytes())
    with contextlib.suppress(OSError):
        path.unlink()
    if not ok:
        raise value
    return value
