"""pty_drive.py: a command run under a pseudo-terminal of its own, as from a user's terminal,
for the integration scripts (salloc.sh): text is typed into it once its output shows what
to wait for, and everything it prints is read until it exits or a deadline passes."""
import os
import pty
import select
import time


def run(argv, steps=(), before_exec=None, timeout=20):
    """Runs argv under a new pty. steps: (ready, action) pairs taken in order, action(fd)
    once ready(output so far) holds. before_exec runs in the child (its stdin is the pty).
    Returns (output text, exit code or None when it was killed at the deadline, whether
    every step was taken)."""
    pid, fd = pty.fork()
    if pid == 0:
        if before_exec is not None:
            before_exec()
        os.execvp(argv[0], argv)
    out, deadline, pending = b"", time.monotonic() + timeout, list(steps)
    while time.monotonic() < deadline:
        while pending and pending[0][0](out):
            pending.pop(0)[1](fd)
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    killed = pending or time.monotonic() >= deadline
    if killed:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    code = None if killed or not os.WIFEXITED(status) else os.WEXITSTATUS(status)
    return out.decode(errors="replace"), code, not pending
