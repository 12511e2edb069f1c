"""Runs beside the suite: the long runs in network namespaces of their own start with the session, one at a time in
a thread, while the rest of the suite runs; their tests take the outcome when pytest reaches them.

Each such run is a subprocess that mostly waits on a link (a 1 Mbit/s bucket watched past consent's 30 s, 10 s
windows of a slow viewer) and shares nothing with the suite but the CPU: no port, no display, no state directory.
In line they were about three of the suite's fifteen minutes. A test module declares its run when it is imported
(`Beside(lambda: ...)`); `outcome()` returns what the run returned or raises what it raised, and runs it there and
then when the session did not start it (a test run alone, or deselected by `-k` and selected again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar, Generic, TypeVar

from tests import netns

T = TypeVar("T")


class Beside(Generic[T]):
    declared: ClassVar[list[Beside[Any]]] = []
    _lane: ClassVar[ThreadPoolExecutor | None] = None

    def __init__(self, run: Callable[[], T]) -> None:
        self._run = run
        self.module = run.__module__
        self._future: Future[T] | None = None
        Beside.declared.append(self)

    def outcome(self) -> T:
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
        cls._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="beside")
        for run in runs:
            run._future = cls._lane.submit(run._run)

    @classmethod
    def stop(cls) -> None:
        """The session's end: drop runs not started, end the one going (by its process group), wait for the thread."""
        if cls._lane is None:
            return
        cls._lane.shutdown(wait=False, cancel_futures=True)
        netns.end_all()
        cls._lane.shutdown(wait=True)
        cls._lane = None
