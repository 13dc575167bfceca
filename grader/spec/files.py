"""What a submitted path is, when it is not a plain file.

    special_kind(path)   # None for a regular file (through links); "a FIFO", "a socket", ... otherwise

A submission is read whole, so it must be a regular file: opening a FIFO waits for a writer forever,
and a device file may never end. Batch discovery and `check` name what they were given instead.
"""

from __future__ import annotations

import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def special_kind(path: Path) -> str | None:
    """None when `path` is a regular file or does not exist; else what it is, for a message."""
    try:
        mode = path.stat().st_mode
    except OSError:  # missing, a dangling link, a loop of links: the callers say "no such file"
        return None
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def not_regular_message(shown: str, kind: str) -> str:
    return f"{shown} is {kind}, not a regular file: submit the kernel file itself"
