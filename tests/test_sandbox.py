"""The worker's sandbox (#13.8) and its warm template (#13.10).

Each test runs a small hand-built library (the CPU backend's entry points and a naive launcher
whose body probes its surroundings and prints what it found) through grader.run.sandbox.run_worker,
the path every verdict takes. The bubblewrap tests skip, visibly, where bwrap is missing or
cannot create namespaces here (`apt-get install bubblewrap`; some containers forbid them).
"""

import os
import platform
import shutil
import subprocess
import time

import pytest
import torch

from grader.run import bwrap, forkserver, sandbox
from grader.spec import exercises
from grader.errors import CannotGrade

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or not shutil.which("g++"), reason="the sandbox is Linux; needs g++"
)
BWRAP = pytest.mark.skipif(bool(bwrap.probe()), reason=f"no sandbox here: {bwrap.probe()}")

PRELUDE = r"""
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
extern "C" const char* cuda_emu_take_error(void) { return 0; }
extern "C" void cuda_emu_configure(unsigned, int) {}
extern "C" void cuda_emu_set_buffers(...) {}
extern "C" void cuda_emu_set_outputs(...) {}
static void say(const char* what, const char* how) { printf("PROBE %s %s\n", what, how); fflush(stdout); }
static const char* ok(long r) { return r == -1 ? strerror(errno) : "yes"; }
static int entries(const char* dir, const char* except = "") {  // -1: cannot list; names starting `except` not counted
    DIR* d = opendir(dir); if (!d) return -1;
    int n = 0;
    for (struct dirent* e; (e = readdir(d));)
        n += e->d_name[0] != '.' && !(*except && strncmp(e->d_name, except, strlen(except)) == 0);
    closedir(d); return n;
}
static void gemm_work(const float* A, const float* B, float* C, int M, int N, int K) {
    for (int i = 0; i < M; ++i) for (int j = 0; j < N; ++j) {
        float s = 0.f; for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j]; C[i * N + j] = s; }
}
"""


def _lib(tmp_path, body: str, name: str = "probe", defines: dict | None = None, prelude: str = "") -> str:
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    src = d / "k.cpp"
    src.write_text(
        prelude + PRELUDE + 'extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, '
        "void*) {\n" + body + "\n}\n"
    )
    flags = [f'-D{k}="{v}"' if isinstance(v, str) else f"-D{k}={v}" for k, v in (defines or {}).items()]
    subprocess.run(
        ["g++", "-O1", "-shared", "-fPIC", *flags, "-o", str(d / "kernel.so"), str(src)],
        check=True,
        capture_output=True,
    )
    return str(d / "kernel.so")


def _run(lib: str, timeout: float = 60) -> sandbox.ChildRun:
    case = exercises.kind("naive").make_case((9, 7, 5), torch.Generator().manual_seed(0))
    wire = [({"case": 0, "shape": list(case.shape)}, {k: v.numpy() for k, v in case.inputs.items()})]
    return sandbox.run_worker(
        {"lib": lib, "exercise": "naive", "backend": "cpu", "schedules": [0]}, wire, timeout=timeout
    )


def _probes(run: sandbox.ChildRun) -> dict[str, str]:
    return {ln.split()[1]: " ".join(ln.split()[2:]) for ln in run.output.splitlines() if ln.startswith("PROBE ")}


@pytest.fixture(params=["template", "subprocess"])
def launcher(request, monkeypatch):
    monkeypatch.setenv("GRADER_FORKSERVER", "1" if request.param == "template" else "0")
    yield request.param


SANDBOX_PROBES = r"""
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {}; a.sin_family = AF_INET; a.sin_port = htons(53); inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
    say("network", ok(s < 0 ? -1 : connect(s, (struct sockaddr*)&a, sizeof a)));
    say("secret-readable", ok(access(SECRET, R_OK)));
    say("cache-entries", entries(CACHE) > 0 ? "some" : "none");
    say("home-entries", entries(HOME_DIR) > 0 ? "some" : "none");
    say("outer-pid-visible", ok(kill(OUTER_PID, 0)));
    int pids = 0; DIR* d = opendir("/proc");
    for (struct dirent* e; d && (e = readdir(d));) pids += e->d_name[0] >= '1' && e->d_name[0] <= '9';
    if (d) closedir(d);
    say("few-pids", pids < 10 ? "yes" : "no");
    FILE* f = fopen("scratch-file", "w"); say("scratch-writable", f ? "yes" : strerror(errno)); if (f) fclose(f);
    say("scratch-was-empty", entries(".") == 1 ? "yes" : "no");
    say("tmp-writable", ok(fopen("/tmp/x", "w") ? 0 : -1));
    say("shm-writable", ok(fopen("/dev/shm/x", "w") ? 0 : -1));
    say("root-writable", ok(fopen("/grader-was-here", "w") ? 0 : -1));
    // bwrap's fresh /dev has about 14 entries; the GPU's nodes (nvidia0, nvidiactl, nvidia-uvm...) come on top
    say("devices", entries("/dev", "nvidia") <= 16 && access("/dev/null", W_OK) == 0 ? "basics" : "many");
    gemm_work(A, B, C, M, N, K);
"""


@BWRAP
def test_the_worker_runs_in_the_sandbox(tmp_path, launcher, monkeypatch):
    monkeypatch.setenv("GRADER_SANDBOX", "bwrap")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".ssh-key").write_text("secret")
    monkeypatch.setenv("HOME", str(home))
    cache = os.environ["GRADER_CACHE"]
    os.makedirs(cache, exist_ok=True)
    open(os.path.join(cache, "another-students-build"), "w").close()
    lib = _lib(
        tmp_path,
        SANDBOX_PROBES,
        defines={"SECRET": str(home / ".ssh-key"), "CACHE": cache, "HOME_DIR": str(home), "OUTER_PID": os.getpid()},
    )
    run = _run(lib)
    p = _probes(run)
    assert run.returncode == 0 and len(run.messages) == 1, run.output
    assert p["network"] != "yes", p  # no network
    assert p["secret-readable"] != "yes", p  # $HOME hidden
    assert p["cache-entries"] == "none" and p["home-entries"] == "none", p  # other students' builds hidden
    assert p["outer-pid-visible"] != "yes" and p["few-pids"] == "yes", p  # its own PID namespace
    # the launcher runs in the native runner, whose own view (grader/run/runner/runner.cpp) has no writable place,
    # not even the worker's scratch
    assert p["scratch-writable"] != "yes" and p["scratch-was-empty"] == "no", p
    assert p["tmp-writable"] != "yes" and p["shm-writable"] != "yes" and p["root-writable"] != "yes", p
    assert p["devices"] == "basics", p  # a fresh /dev: the basics (and GPU nodes where there are)
    assert sandbox.launcher_name().endswith("+ bwrap")


def _borrowable() -> dict[str, str]:
    """What a kernel could load to do its work for it, as this process finds it: libpython, Python's
    standard library, torch's libraries, cuBLAS (where installed), the course's kernels."""
    import glob
    import sys
    import sysconfig

    found = {
        "libpython": os.path.join(
            sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("LDLIBRARY") or ""
        ),
        "stdlib": os.path.dirname(os.__file__),
        "torch-lib": os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"),
        "python": os.path.realpath(sys.executable),
        "kernels": os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels"),
    }
    found |= {
        f"cublas{i}": p
        for i, p in enumerate(
            glob.glob(os.path.join(sys.prefix, "lib", "*", "site-packages", "nvidia", "cublas", "lib", "libcublas.so*"))
        )
    }
    return {k: p for k, p in found.items() if os.path.exists(p)}


@BWRAP
def test_the_kernels_process_sees_only_its_own_files(tmp_path, launcher, monkeypatch):
    """Inside bubblewrap the worker sees Python, torch and cuBLAS (it imports them); the native runner, where
    the launcher runs, has a view of its own: the launcher can open or load none of them (a kernel reaches
    open and dlopen by walking libc from `printf`; this one calls them by name)."""
    monkeypatch.setenv("GRADER_SANDBOX", "bwrap")
    targets = _borrowable()
    assert {"libpython", "stdlib", "torch-lib", "kernels"} <= set(targets), targets
    body = "".join(
        f'say("{k}", open("{p}", O_RDONLY) >= 0 || dlopen("{p}", RTLD_LAZY) ? "reachable" : "absent");\n'
        for k, p in targets.items()
    )
    body += 'say("root-entries", std::to_string(entries("/")).c_str());\ngemm_work(A, B, C, M, N, K);'
    lib = _lib(tmp_path, body, "files", prelude="#include <dlfcn.h>\n#include <fcntl.h>\n#include <string>\n")
    run = _run(lib)
    p = _probes(run)
    assert run.returncode == 0 and len(run.messages) == 1, run.output
    assert {k: p.get(k) for k in targets} == dict.fromkeys(targets, "absent"), p
    assert int(p["root-entries"]) < 12, p  # bin, dev, lib, lib64, libraries, proc, sys, usr


def test_required_sandbox_without_bwrap_refuses_to_grade(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADER_SANDBOX", "bwrap")
    monkeypatch.setattr(bwrap, "probe", lambda: "bubblewrap is not installed (apt-get install bubblewrap)")
    with pytest.raises(CannotGrade, match="GRADER_SANDBOX=bwrap"):
        _run(_lib(tmp_path, "gemm_work(A, B, C, M, N, K);"))


def test_without_the_sandbox_the_scratch_is_still_private(tmp_path, launcher, monkeypatch):
    monkeypatch.setenv("GRADER_SANDBOX", "none")
    lib = _lib(
        tmp_path,
        r"""
        say("scratch-was-empty", entries(".") == 0 || access("/libraries", F_OK) == 0 ? "yes" : "no");  // or own view
        FILE* f = fopen("left-behind", "w"); if (f) fclose(f);
        say("tmpdir", getenv("TMPDIR") ? getenv("TMPDIR") : "unset");
        gemm_work(A, B, C, M, N, K);""",
    )
    for _ in range(2):  # the second run does not see what the first left
        p = _probes(_run(lib))
        assert p == {"scratch-was-empty": "yes", "tmpdir": "/proc/self/cwd"}, p


def test_a_hang_is_killed_and_a_crash_is_a_crash(tmp_path, launcher):
    hang = _lib(tmp_path, "for (volatile int i = 0;; i = 0) {}", "hang")
    t0 = time.monotonic()
    run = _run(hang, timeout=3)
    assert run.timed_out and time.monotonic() - t0 < 20, run.output
    crash = _lib(tmp_path, "*(volatile int*)16 = 1;", "crash")
    run = _run(crash)
    assert run.crashed and run.describe_exit() == "crashed (SIGSEGV)", (run.returncode, run.output)
    good = _lib(tmp_path, "gemm_work(A, B, C, M, N, K);", "good")
    run = _run(good)  # and the next verdict is as good as new
    assert run.returncode == 0 and len(run.messages) == 1, run.output


LINGER = r"""
static volatile int spin;
struct Linger {  // a static object whose destructor never ends: the library never finishes unloading
    ~Linger() { for (;;) spin = spin + 1; }
};
static Linger linger;
"""


def test_a_worker_that_lingers_after_its_last_result_does_not_hold_the_verdict(tmp_path, launcher):
    # the worker's last message says every result is out; what the processes do while they end (the
    # runner's exit, a CUDA context's teardown) must not add to the verdict's time
    run = _run(_lib(tmp_path, "gemm_work(A, B, C, M, N, K);", "linger", prelude=LINGER))
    assert run.returncode == 0 and not run.timed_out and len(run.messages) == 1, run.output
    assert run.ended - run.arrivals[-1] < 2.5, (run.arrivals, run.ended)


def test_the_template_never_loads_a_submission(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_FORKSERVER", "1")
    monkeypatch.setenv("GRADER_SANDBOX", "none")  # so that the template is our child, and its maps readable
    lib = _lib(tmp_path, "gemm_work(A, B, C, M, N, K);", "unique_submission_name")
    assert _run(lib).returncode == 0
    client = sandbox._TEMPLATE.get("client")
    assert client is not None and client.alive(), sandbox.launcher_name()
    try:
        maps = open(f"/proc/{client.proc.pid}/maps").read()
    except OSError:
        pytest.skip("cannot read the template's memory map here (not root)")
    assert "kernel.so" not in maps and "unique_submission_name" not in maps
    assert "libtorch" in maps  # it is warm


def test_a_template_that_cannot_start_falls_back(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_FORKSERVER", "1")
    sandbox.shutdown()

    def broken(*a, **k):
        raise forkserver.TemplateError("no template today")

    monkeypatch.setattr(forkserver, "Client", broken)
    lib = _lib(tmp_path, "gemm_work(A, B, C, M, N, K);")
    run = _run(lib)
    assert run.returncode == 0 and len(run.messages) == 1, run.output
    assert sandbox.launcher_name().startswith("subprocess")
    monkeypatch.undo()
    sandbox._TEMPLATE.clear()


def test_a_template_started_from_a_thread_that_ends_keeps_running(tmp_path, monkeypatch):
    """The template dies with its parent (PR_SET_PDEATHSIG, bwrap --die-with-parent), and Linux takes the
    parent to be the *thread* that started it. A notebook's setup warms it from a thread, and on a GPU the
    access profile runs in a thread beside the timed run: when that thread ended, the template (and the
    GPU verdict running in it) was killed. It must outlive the thread that asked for it."""
    import threading

    monkeypatch.setenv("GRADER_FORKSERVER", "1")
    sandbox.shutdown()
    t = threading.Thread(target=lambda: sandbox._template(sandbox._child_env()))
    t.start()
    t.join()
    client = sandbox._TEMPLATE.get("client")
    assert client is not None, sandbox.launcher_name()
    time.sleep(1.0)  # a killed template is noticed by its reader thread at once
    assert client.alive(), "the template died with the thread that started it"
    run = _run(_lib(tmp_path, "gemm_work(A, B, C, M, N, K);", "from_thread"))
    assert run.returncode == 0 and len(run.messages) == 1, run.output
    assert sandbox._TEMPLATE.get("client") is client  # the same template served it


def test_a_template_that_dies_mid_run_is_not_the_kernels_fault(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_FORKSERVER", "1")
    hang = _lib(tmp_path, "for (volatile int i = 0;; i = 0) {}", "hang")
    _run(_lib(tmp_path, "gemm_work(A, B, C, M, N, K);"))  # the template is up
    client = sandbox._TEMPLATE["client"]
    import threading

    threading.Timer(1.5, lambda: os.killpg(client.proc.pid, 9)).start()
    with pytest.raises(CannotGrade, match="template stopped"):
        _run(hang, timeout=30)
    run = _run(_lib(tmp_path, "gemm_work(A, B, C, M, N, K);", "after"))  # a new template serves the next
    assert run.returncode == 0 and len(run.messages) == 1, run.output


def test_doctor_says_whether_the_sandbox_is_active(monkeypatch):
    from grader.course import doctor

    monkeypatch.setattr(bwrap, "probe", lambda: "bubblewrap is not installed (apt-get install bubblewrap)")
    monkeypatch.delenv("GRADER_SANDBOX", raising=False)
    f = doctor.check_sandbox(None)
    assert f.name == "sandbox" and f.warn and "not active" in f.value and "apt-get install bubblewrap" in f.fix
    monkeypatch.setattr(bwrap, "probe", lambda: "")
    f = doctor.check_sandbox(None)
    assert "bubblewrap" in f.value and "not active" not in f.value


@pytest.mark.gpu
@pytest.mark.parametrize("sandboxed", [pytest.param(True, marks=BWRAP), False])
def test_a_gpu_verdict_from_the_template(monkeypatch, sandboxed):
    """CUDA starts in the forked child (the template never touched it), inside bwrap with only the
    GPU's device nodes where it works; two verdicts in a row, both timed."""
    KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")
    from grader.judge import grade

    monkeypatch.setenv("GRADER_FORKSERVER", "1")
    monkeypatch.setenv("GRADER_SANDBOX", "bwrap" if sandboxed else "none")
    for name, ex in (("01_naive.cu", "naive"), ("02_tiled.cu", "tiled")):
        r = grade.grade(ex, os.path.join(KERNELS, name), backend="cuda")
        assert r.passed and r.speedup is not None, (r.message, r.output)
    assert sandbox.launcher_name() == "template" + (" + bwrap" if sandboxed else "")
