"""Run a pure function of submission text in a child process with a time and a memory limit.

    bounded.call("grader.compile.cpu.rewrite", "_rewrite_json", source, timeout=10)   # its JSON result

The grader reads text anyone can write (a kernel file, a notebook) with regexes, json and ast, whose
worst cases are quadratic time or gigabytes: in the grader's own process one crafted file would stall a
batch, or take the machine's memory and every other verdict with it. Here the function runs in
`python -I -S` that imports the module without its packages' __init__ (no torch: about 50 ms to
start), under RLIMIT_AS and RLIMIT_CPU, and is killed at the wall-clock limit. Arguments and the
result travel as JSON, so the function takes and returns plain data.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MEMORY_BYTES = 1 << 30  # of the child's address space: the rewrite of a 1 MB kernel file peaked at 224 MB RSS
TIMEOUT_S = 10.0

# the child: limits first, then bare packages above the module (grader's __init__ imports torch,
# grader.compile.cpu's the build and its tools: 0.4 s), the call
_CHILD = r"""
import importlib, json, os, resource, sys, types
memory, seconds = int(sys.argv[1]), int(sys.argv[2])
for limit, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, seconds)):
    try:
        resource.setrlimit(limit, (value, value))
    except (ValueError, OSError):
        pass
request = json.loads(sys.stdin.buffer.read())
parts = request["module"].split(".")
for n in range(1, len(parts)):
    package = types.ModuleType(".".join(parts[:n]))
    package.__path__ = [os.path.join(sys.argv[3], *parts[1:n])]
    sys.modules[package.__name__] = package
try:
    result = {"result": getattr(importlib.import_module(request["module"]), request["function"])(*request["args"])}
except MemoryError:
    result = {"exceeded": "memory"}
except RecursionError:
    result = {"exceeded": "depth"}
sys.stdout.write(json.dumps(result))
"""


class LimitExceeded(Exception):
    """The function went past a limit: `what` is "time", "memory" or "depth" (the message says which)."""

    def __init__(self, what: str, timeout: float, memory: int):
        self.what = what
        limit = {"time": f"{timeout:g} s", "memory": f"{memory >> 20} MB of memory", "depth": "Python's nesting limit"}
        super().__init__(f"it took more than {limit[what]}")


def call(module: str, function: str, *args, timeout: float = TIMEOUT_S, memory: int | None = None):
    """`module.function(*args)` in a limited child; its (JSON) result. Raises LimitExceeded past a limit,
    RuntimeError when the child failed otherwise (a bug of ours: its error output says what)."""
    memory = memory or MEMORY_BYTES
    request = json.dumps({"module": module, "function": function, "args": list(args)})
    cmd = [
        sys.executable,
        "-I",
        "-S",
        "-c",
        _CHILD,
        str(memory),
        str(max(1, int(timeout + 1))),
        str(Path(__file__).parent.parent),
    ]
    try:
        r = subprocess.run(cmd, input=request.encode(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LimitExceeded("time", timeout, memory) from None
    if r.returncode == 0:
        reply = json.loads(r.stdout)
        if "exceeded" in reply:
            raise LimitExceeded(reply["exceeded"], timeout, memory)
        return reply["result"]
    if r.returncode < 0 or b"MemoryError" in r.stderr:  # SIGXCPU at the CPU limit, SIGKILL; or out of memory
        raise LimitExceeded("memory" if b"MemoryError" in r.stderr else "time", timeout, memory)
    raise RuntimeError(f"{module}.{function} failed in its child: {r.stderr.decode(errors='replace')[-2000:]}")
