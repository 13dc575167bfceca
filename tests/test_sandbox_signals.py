"""#13.2: a kernel file must not be able to signal, trace or re-limit the grader (or anyone else).

`tgkill(getppid(), getppid(), SIGKILL)` in a launcher killed `check`, and in `batch` the whole
run. The source scan and the binary allow-list (grader.compile.forbidden, the toolchain's link check)
refuse such a file before it runs; these tests go past both on purpose (the library is built
here with g++, by hand) to test the layer underneath: the worker's seccomp filter
(grader.run.seccomp), which holds with or without bubblewrap. The grader under attack is always a
subprocess of the test, so that a failure shows as its death, never as pytest's.
"""

import json
import os
import platform
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # not from conftest: tests/cpu/ has its own

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64" or not shutil.which("g++"),
    reason="the seccomp filter is x86_64 Linux; needs g++",
)

# A CPU-backend-shaped library (the two cuda_emu_* entry points the binding looks up, and the
# naive launcher). It probes with signal 0 and read-only calls first (harmless if they got
# through), prints what each did, then tries to kill its parent for real, then does the work.
ATTACK = r"""
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
extern "C" const char* cuda_emu_take_error(void) { return 0; }
extern "C" void cuda_emu_configure(unsigned, int) {}
extern "C" void cuda_emu_set_buffers(...) {}
extern "C" void cuda_emu_set_outputs(...) {}
static void probe(const char* what, long r) {
    printf("PROBE %s %s\n", what, r == -1 && errno == EPERM ? "refused" : r == -1 ? strerror(errno) : "ALLOWED");
    fflush(stdout);
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, void*) {
    pid_t p = getppid();
    probe("kill-parent", kill(p, 0));
    probe("kill-everyone", kill(-1, 0));
    probe("kill-parent-group", kill(-getpgid(p), 0));
    probe("tgkill-parent", syscall(SYS_tgkill, p, p, 0));
    probe("tkill-parent", syscall(SYS_tkill, p, 0));
    probe("ptrace-parent", ptrace(PTRACE_PEEKDATA, p, (void*)&probe, 0));
    char buf[8];
    struct iovec here = {buf, 8}, there = {(void*)&probe, 8};
    probe("process_vm_readv-parent", process_vm_readv(p, &here, 1, &there, 1, 0));
    struct rlimit old;
    probe("prlimit-parent", prlimit(p, RLIMIT_CPU, 0, &old));
    probe("kill-self", kill(getpid(), 0));
    syscall(SYS_tgkill, p, p, SIGKILL);   // the attack itself
    kill(p, SIGKILL);
    syscall(SYS_tkill, p, SIGKILL);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float s = 0.f;
            for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
            C[i * N + j] = s;
        }
}
"""


@pytest.fixture(scope="module")
def attack_lib(tmp_path_factory):
    d = tmp_path_factory.mktemp("attack")
    (d / "attack.cpp").write_text(ATTACK)
    subprocess.run(
        ["g++", "-O1", "-shared", "-fPIC", "-o", str(d / "kernel.so"), str(d / "attack.cpp")],
        check=True,
        capture_output=True,
    )
    return str(d / "kernel.so")


def _env(sandbox: str) -> dict:
    return os.environ | {"PYTHONPATH": ROOT, "GRADER_SANDBOX": sandbox}


DRIVER = textwrap.dedent("""
    import json, sys, torch
    from grader import exercises, sandbox
    case = exercises.kind("naive").make_case((33, 17, 20), torch.Generator().manual_seed(0))
    wire = [({"case": 0, "shape": list(case.shape)}, {k: v.numpy() for k, v in case.inputs.items()})]
    run = sandbox.run_worker({"lib": sys.argv[1], "exercise": "naive", "backend": "cpu", "schedules": [0]},
                             wire, timeout=60)
    print("RESULT " + json.dumps({"rc": run.returncode, "output": run.output, "messages": len(run.messages),
                                  "protocol_error": run.protocol_error}))
""")


def _run_driver(lib: str, sandbox: str) -> dict:
    p = subprocess.run(
        [sys.executable, "-c", DRIVER, lib], capture_output=True, text=True, timeout=180, env=_env(sandbox)
    )
    assert p.returncode == 0, f"the grading process died (rc {p.returncode}): {p.stderr[-2000:]}"
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


@pytest.mark.parametrize("sandbox", ["none", "auto"])
def test_a_kernel_cannot_signal_trace_or_limit_its_parent(attack_lib, sandbox):
    """sandbox=none: the seccomp filter alone; auto: with bubblewrap too where it works."""
    r = _run_driver(attack_lib, sandbox)
    probes = [ln for ln in r["output"].splitlines() if ln.startswith("PROBE")]
    assert len(probes) == 9, r["output"]
    # the kernel runs in the native runner, which holds the worker's filter (only the worker's pid may be
    # signalled) and its own (only the runner's): it may signal no process at all, itself included
    # (abort() then ends it by a trap instead: still a crash, reported as one)
    assert not [p for p in probes if p.endswith("ALLOWED")], probes
    for what in (
        "kill-parent",
        "kill-everyone",
        "tgkill-parent",
        "ptrace-parent",
        "process_vm_readv-parent",
        "prlimit-parent",
    ):
        assert f"PROBE {what} refused" in probes or sandbox != "none", probes
    assert r["rc"] == 0 and r["messages"] == 1 and not r["protocol_error"], r


def test_batch_survives_a_kernel_that_kills_its_parent(attack_lib, tmp_path):
    """Three students, the middle one's kernel kills the grader: every row is recorded."""
    subs = tmp_path / "subs"
    subs.mkdir()
    good = open(os.path.join(ROOT, "kernels", "01_naive.cu")).read()
    (subs / "alice.cu").write_text(good)
    (subs / "bob.cu").write_text(good + "\n// KILL_PARENT\n")
    (subs / "carol.cu").write_text(good + "\n// another\n")
    driver = textwrap.dedent("""
        import sys
        from pathlib import Path
        from grader import batch, forbidden, toolchain
        real = toolchain.build
        def build(source, **kw):  # bob's file is the hand-built attack (past the scan and the link check)
            if "KILL_PARENT" in source:
                return toolchain.Build(Path(sys.argv[1]), "cpu", kw.get("exercise"), "attack", True)
            return real(source, **kw)
        toolchain.build = build
        forbidden.scan = lambda source, *a, **k: []
        rows = batch.run_batch("naive", sys.argv[2], sys.argv[3], jobs=1, backend="cpu", progress=False)
        print("ROWS", [(r["student_id"], r["passed"]) for r in rows])
    """)
    out = tmp_path / "grades.csv"
    p = subprocess.run(
        [sys.executable, "-c", driver, attack_lib, str(subs), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env("none"),
    )
    assert p.returncode == 0, f"batch died (rc {p.returncode}): {p.stderr[-2000:]}"
    rows = {r["student_id"]: r for r in json.loads(out.with_suffix(".json").read_text())["grades"]}
    assert set(rows) == {"alice", "bob", "carol"}, p.stdout
    assert rows["alice"]["passed"] and rows["carol"]["passed"], rows
