"""Run a command where no new user namespace can be made: what a container under Docker's or the runtime's
default seccomp profile looks like to Chromium. Not a test; tests/deploy runs it as the unprivileged user.

    python no_userns.py CMD [ARGS...]

It enters a user namespace of its own (mapping only the caller's uid and gid, so nothing changes for files),
sets that namespace's user.max_user_namespaces to 0, and execs CMD: CMD and its children keep working normally
but cannot create user namespaces any more. Needs nothing but an unprivileged user namespace for itself.
Exits 3 with a message when that is impossible here.
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: no_userns.py CMD [ARGS...]", file=sys.stderr)
        return 2
    uid, gid = os.geteuid(), os.getegid()
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        if libc.unshare(CLONE_NEWUSER) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
        _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
        _write("/proc/sys/user/max_user_namespaces", "0")
    except OSError as exc:
        print(f"no_userns: cannot take user namespaces away here: {exc}", file=sys.stderr)
        return 3
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
