"""The /proc walker, against this test process and children it starts (each ended by its own pid)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from framestream.browser.proctable import ProcessInfo, descendants, in_group, list_processes, mentioning, read_process


def wait_for(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.01)


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A child in a session of its own, with a marker in its command line and an odd command name, that waits
    on its stdin (so it is alive until the test ends it)."""
    code = "import sys; open('/proc/self/comm', 'w').write('odd) na (me'); print(flush=True); sys.stdin.read()"
    with subprocess.Popen([sys.executable, "-c", code, "proctable-test-marker"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, start_new_session=True) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()  # its name is set
        try:
            yield proc
        finally:
            proc.kill()  # closing the streams and reaping it is the `with`'s


def test_this_process_is_listed_as_the_kernel_sees_it() -> None:
    me = next(info for info in list_processes() if info.pid == os.getpid())
    assert (me.ppid, me.pgrp) == (os.getppid(), os.getpgrp())
    with open("/proc/self/cmdline", "rb") as f:
        assert me.cmdline == f.read()
    assert me.args == [os.fsencode(arg) for arg in sys.orig_argv]
    assert me.state == "R" and not me.zombie  # it is reading its own entry
    assert read_process(os.getpid()) == me


def test_a_child_is_found_by_parent_group_and_command_line(child: subprocess.Popen[bytes]) -> None:
    info = read_process(child.pid)
    assert info is not None
    # The command name `odd) na (me` must not shift the fields after it.
    assert (info.ppid, info.pgrp) == (os.getpid(), child.pid)
    assert info.args[-1] == b"proctable-test-marker"
    assert child.pid in [d.pid for d in descendants(os.getpid())]
    assert [p.pid for p in in_group(child.pid)] == [child.pid]
    assert [p.pid for p in mentioning(b"proctable-test-marker")] == [child.pid]


def test_descendants_are_the_whole_subtree_parents_first() -> None:
    table = [ProcessInfo(1, 0, 1, b"init"), ProcessInfo(10, 1, 10, b"a"), ProcessInfo(11, 10, 10, b"b"),
             ProcessInfo(12, 11, 10, b"c"), ProcessInfo(20, 1, 20, b"other")]
    found = [p.pid for p in descendants(10, table)]
    assert sorted(found) == [11, 12] and found.index(11) < found.index(12)
    assert descendants(12, table) == []


def test_a_zombie_is_neither_in_its_group_nor_mentioning(child: subprocess.Popen[bytes]) -> None:
    child.kill()  # not waited for yet: it stays a zombie until `child`'s teardown reaps it
    wait_for(lambda: (info := read_process(child.pid)) is not None and info.zombie, "a zombie")
    assert in_group(child.pid) == []
    assert mentioning(b"proctable-test-marker") == []
    assert child.pid in [d.pid for d in descendants(os.getpid())]  # still a child until reaped


def test_a_process_gone_while_the_table_is_read_is_skipped(child: subprocess.Popen[bytes],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    child.kill()
    child.wait()  # reaped: /proc has no entry for it any more
    assert read_process(child.pid) is None
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: [str(child.pid), *real_listdir(path)])
    listed = [p.pid for p in list_processes()]
    assert child.pid not in listed and os.getpid() in listed
