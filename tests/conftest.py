import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "kernels")


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


HAS_GPU = _has_gpu()


def pytest_collection_modifyitems(config, items):
    from grader.compile.toolchain import find_nvcc

    no_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (run these on the GPU machine)")
    no_nvcc = pytest.mark.skip(reason="needs nvcc")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(no_gpu)
        if "nvcc" in item.keywords and not find_nvcc():
            item.add_marker(no_nvcc)


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Builds go to a cache of the test run's own (the user's cache stays untouched). The processes of one
    run (pytest-xdist) share it: a kernel, the CPU runtime and the runner are built once, not once per
    process (builds publish with an atomic rename: grader.compile.toolchain)."""
    if not os.environ.get("GRADER_TEST_KEEP_CACHE"):
        base = tmp_path_factory.getbasetemp()
        run_dir = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # xdist: .../pytest-N/popen-gwK
        cache = run_dir / "grader-cache"
        cache.mkdir(exist_ok=True)
        os.environ["GRADER_CACHE"] = str(cache)
    yield


@pytest.fixture
def backend():
    return "cuda" if HAS_GPU else "cpu"
