"""A seccomp filter for the worker: it may signal, trace or re-limit no process but itself.

A kernel file is native code. Without this, `tgkill(getppid(), getppid(), SIGKILL)` in a
launcher killed `check`, and in `batch` the whole run (every later student ungraded); a
kernel could also kill a sibling worker (another student's verdict), `kill(-1, SIGKILL)`
everything the user owns, or `prlimit` the grader into SIGXCPU. The worker installs this
filter on itself before it loads the submission's library (grader.run.worker.limit_self), so it
holds whatever the source does and whether or not bubblewrap is there (grader.run.bwrap adds a
PID namespace on top, where the grader is not even visible).

What it refuses (EPERM), unless the target is the worker itself (torch, the CUDA runtime
and glibc's raise()/abort() signal their own process: pid == getpid() stays allowed):
  kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_open   (the pid argument)
  process_vm_readv, process_vm_writev, prlimit64 (0 = self too), sched_setaffinity,
  sched_setscheduler, sched_setparam, sched_setattr, migrate_pages, move_pages
  setpriority / ioprio_set    (only for one process, and that one the worker)
  ptrace, pidfd_send_signal, pidfd_getfd, process_madvise   (always)
A system call through the 32-bit (int 0x80) or x32 ABI, which would dodge the numbers
above, is refused too (the architecture field is checked first; i386 calls kill the process).

x86_64 Linux only; elsewhere install() says why it did nothing and the worker goes on (the
PID namespace of grader.run.bwrap, where available, still keeps the grader out of reach).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

# <linux/filter.h> BPF opcodes
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
# <linux/seccomp.h>
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_OFF_NR, _OFF_ARCH = 0, 4


def _arg(i: int) -> int:
    """Offset of the low 32 bits of argument i in struct seccomp_data (little-endian): pids are
    ints, and the kernel ignores the high half, so that is all there is to compare."""
    return 16 + 8 * i


# x86_64 numbers (asm/unistd_64.h): name -> (nr, rule). Rules:
#   ("self", i)       argument i must be the worker's pid
#   ("self0", i)      argument i must be 0 or the worker's pid (0 means "me" for these calls)
#   ("who", w, i)     argument 0 must be `w` (one process, not a group or a user) and argument i 0 or own pid
#   ("never",)
SYSCALLS_X86_64 = {
    "kill": (62, ("self", 0)),
    "tkill": (200, ("self", 0)),
    "tgkill": (234, ("self", 0)),
    "rt_sigqueueinfo": (129, ("self", 0)),
    "rt_tgsigqueueinfo": (297, ("self", 0)),
    "pidfd_open": (434, ("self", 0)),
    "process_vm_readv": (310, ("self", 0)),
    "process_vm_writev": (311, ("self", 0)),
    "prlimit64": (302, ("self0", 0)),
    "sched_setaffinity": (203, ("self0", 0)),
    "sched_setscheduler": (144, ("self0", 0)),
    "sched_setparam": (142, ("self0", 0)),
    "sched_setattr": (314, ("self0", 0)),
    "migrate_pages": (256, ("self0", 0)),
    "move_pages": (279, ("self0", 0)),
    "setpriority": (141, ("who", 0, 1)),  # PRIO_PROCESS = 0
    "ioprio_set": (251, ("who", 1, 1)),  # IOPRIO_WHO_PROCESS = 1
    "ptrace": (101, ("never",)),
    "pidfd_send_signal": (424, ("never",)),
    "pidfd_getfd": (438, ("never",)),
    "process_madvise": (440, ("never",)),
}
_SYS_SECCOMP, _SYS_PRCTL_NAME = 317, "prctl"
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC = 1, 1


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return (code, jt, jf, k & 0xFFFFFFFF)


def program(pid: int) -> list[tuple[int, int, int, int]]:
    """The BPF program for a worker whose pid (as it sees itself) is `pid`."""
    deny = _RET_ERRNO | errno.EPERM
    prog = [
        _ins(_LD_W_ABS, _OFF_ARCH),
        _ins(_JEQ_K, _AUDIT_ARCH_X86_64, jt=1),
        _ins(_RET_K, _RET_KILL_PROCESS),
        _ins(_LD_W_ABS, _OFF_NR),
        _ins(_JGE_K, _X32_SYSCALL_BIT, jf=1),
        _ins(_RET_K, deny),
    ]
    for nr, rule in SYSCALLS_X86_64.values():
        block = _rule_block(rule, pid, deny)
        prog.append(_ins(_LD_W_ABS, _OFF_NR))  # the accumulator may hold an argument now
        prog.append(_ins(_JEQ_K, nr, jf=len(block)))  # not this call: skip its block
        prog.extend(block)
    prog.append(_ins(_RET_K, _RET_ALLOW))
    return prog


def _rule_block(rule: tuple, pid: int, deny: int) -> list:
    """Instructions that end in a return, judging one system call's arguments."""
    kind = rule[0]
    if kind == "never":
        return [_ins(_RET_K, deny)]
    if kind == "who":
        _, which, i = rule
        tail = _allowed_values(_arg(i), [0, pid], deny)
        return [_ins(_LD_W_ABS, _arg(0)), _ins(_JEQ_K, which, jf=len(tail) - 2)] + tail  # else -> tail's ret deny
    values = [pid] if kind == "self" else [0, pid]
    return _allowed_values(_arg(rule[1]), values, deny)


def _allowed_values(offset: int, values: list[int], deny: int) -> list:
    """load the argument; allow when it is one of `values`, else deny. The last two
    instructions are `ret deny; ret allow` (a failed test before them jumps to `ret deny`)."""
    out = [_ins(_LD_W_ABS, offset)]
    n = len(values)
    for j, v in enumerate(values):
        out.append(_ins(_JEQ_K, v, jt=n - j))  # -> ret allow
    out += [_ins(_RET_K, deny), _ins(_RET_K, _RET_ALLOW)]
    return out


def available() -> str:
    """'' when install() can work here, else why not."""
    if platform.system() != "Linux":
        return f"seccomp is Linux only (this is {platform.system()})"
    if platform.machine() != "x86_64":
        return f"the filter is written for x86_64 (this is {platform.machine()})"
    return ""


def install() -> str:
    """Install the filter on this process (every thread). Returns '' on success, else the
    reason it is not installed (the caller reports it; nothing is half-installed)."""
    why = available()
    if why:
        return why
    prog = program(os.getpid())
    raw = b"".join(struct.pack("<HBBI", *ins) for ins in prog)
    buf = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(prog), ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
    # seccomp(2) with TSYNC covers threads torch or the runtime may already have started
    libc.syscall.restype = ctypes.c_long
    if (
        libc.syscall(
            ctypes.c_long(_SYS_SECCOMP),
            ctypes.c_long(_SECCOMP_SET_MODE_FILTER),
            ctypes.c_long(_SECCOMP_FILTER_FLAG_TSYNC),
            ctypes.byref(fprog),
        )
        == 0
    ):
        return ""
    err = ctypes.get_errno()
    if err == errno.ENOSYS or err == errno.EINVAL:  # kernels before 3.17: this thread only
        if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0:
            return ""
        err = ctypes.get_errno()
    return f"seccomp filter not installed: {os.strerror(err)}"
