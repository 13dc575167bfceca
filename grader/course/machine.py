"""The machine, measured: notebook 00's probes of a GPU and a CPU roofline.

    from grader import machine
    machine.cpu_roofline()             # any machine: numpy copy (GB/s) and matmul (GFLOP/s)
    gpu = machine.GpuProbes()          # GPU only: builds kernels/00_machine.cu with the course's toolchain
    gpu.latency_table()                # cycles per dependent load: shared memory, L1, L2, HBM
    gpu.latency_sweep(footprints)      # cycles per load against the chain's footprint
    gpu.bandwidth_sweep(sizes)         # copy GB/s against buffer size
    gpu.fma_rate([1, 2, 4, 8])         # FMAs per cycle of one SM against warps in the block
    machine.h200()                     # the committed H200 figures (kernels/results/h200_machine.json)

benchmarks/gpu_machine.py runs all of it on a GPU and writes the results file.
"""

from __future__ import annotations

import ctypes
import json
import os
import time
from pathlib import Path

import numpy as np

from grader.spec.exercises import KERNELS_DIR
from grader.run.host import cpu_name  # noqa: F401  (machine.cpu_name, as before)

RESULTS = KERNELS_DIR / "results" / "h200_machine.json"
KB, MB, GB = 1 << 10, 1 << 20, 1 << 30
# Footprints of the pointer chase that each level serves (H200: 256 KB of L1 + shared per SM,
# 60 MB of L2): one each for the table. The sweep shows where the steps really are.
TABLE_FOOTPRINTS = {"L1 hit": 16 * KB, "L2 hit": 4 * MB, "HBM": 512 * MB}
SWEEP_FOOTPRINTS = [
    4 * KB,
    16 * KB,
    64 * KB,
    128 * KB,
    192 * KB,
    256 * KB,
    512 * KB,
    1 * MB,
    4 * MB,
    16 * MB,
    32 * MB,
    64 * MB,
    128 * MB,
    512 * MB,
    2 * GB,
    8 * GB,
    16 * GB,
    32 * GB,
    64 * GB,
]
WIDE = 8 * GB  # past this footprint the chain holds 64-bit indices (int32 ones would overflow)
BANDWIDTH_SIZES = [256 * KB, 1 * MB, 4 * MB, 16 * MB, 32 * MB, 64 * MB, 256 * MB, 1 * GB]
# The seed article's figures for Hopper (cited, not measured here): shared memory about 32 cycles;
# a global load 188 cycles on an L2 hit, 296 on an L2 miss whose page is in the TLB, 616 on a TLB miss.
SEED_HOPPER_CYCLES = {"shared memory": 32, "L2 hit": 188, "HBM, TLB hit": 296, "HBM, TLB miss": 616}


# ---------------------------------------------------------------------------- CPU
def _best(fn, repeat: int) -> float:
    fn()  # warm-up: page faults, thread start-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def cpu_roofline(copy_bytes: int = 128 * MB, n: int = 1024, repeat: int = 5) -> dict:
    """This CPU's two roofs, measured with numpy: copy bandwidth (bytes read + written per second;
    a buffer far larger than the caches) and float32 matmul FLOP/s at n^3 (numpy's BLAS, all cores)."""
    src = np.ones(copy_bytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    t_copy = _best(lambda: np.copyto(dst, src), repeat)
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    t_mm = _best(lambda: a @ a, repeat)
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "copy_GBs": 2 * copy_bytes / t_copy / 1e9,
        "matmul_GFLOPs": 2 * n**3 / t_mm / 1e9,
        "copy_bytes": copy_bytes,
        "matmul_n": n,
    }


# ---------------------------------------------------------------------------- GPU
def pointer_chain(footprint: int, stride: int = 128, *, device="cpu", seed: int = 0, wide: bool = False):
    """(next, start): an int32 (wide: int64) array of footprint bytes holding one random cycle through
    footprint/stride nodes, `stride` bytes apart (a node per cache line, in random order, so
    neither a prefetcher nor a cache line shared by two steps helps). next[j] is the next index."""
    import torch

    dtype, size = (torch.int64, 8) if wide else (torch.int32, 4)
    step = stride // size
    nodes = max(2, footprint // stride)
    gen = torch.Generator(device=device).manual_seed(seed)
    order = torch.randperm(nodes, device=device, generator=gen, dtype=torch.int64) * step
    nxt = torch.zeros(nodes * step, dtype=dtype, device=device)
    nxt[order] = torch.roll(order, -1).to(dtype)  # int32: indices < 2^31 up to 8 GB
    return nxt, int(order[0])


class GpuProbes:
    """kernels/00_machine.cu, built by the course's toolchain (nvcc, cached) and called through ctypes."""

    def __init__(self):
        import torch

        from grader.compile import toolchain

        if not torch.cuda.is_available():
            raise RuntimeError("GpuProbes needs a CUDA GPU; without one, read machine.h200()")
        src = KERNELS_DIR / "00_machine.cu"
        build = toolchain.build(src.read_text(), backend="cuda", filename=src.name)
        self.lib = ctypes.CDLL(str(build.path), mode=ctypes.RTLD_LOCAL)
        P, I, LL = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        self.lib.chase_global.argtypes = [P, ctypes.c_uint32, I, I, I, I, P, P, P]
        self.lib.chase_shared.argtypes = [P, I, ctypes.c_uint32, I, P, P, P]
        self.lib.chase_global64.argtypes = [P, ctypes.c_uint64, I, P, P, P]
        self.lib.copy_floats.argtypes = [P, P, LL, I, P]
        self.lib.fma_rate.argtypes = [I, I, P, P, P]
        for f in ("chase_global", "chase_global64", "chase_shared", "copy_floats", "fma_rate"):
            getattr(self.lib, f).restype = None
        self.lib.grader_synchronize.restype = ctypes.c_int
        self.lib.grader_last_error.restype = ctypes.c_int
        self.lib.grader_error_string.restype = ctypes.c_char_p
        self.lib.grader_error_string.argtypes = [ctypes.c_int]
        self.torch = torch
        self.props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.cycles = torch.zeros(1, dtype=torch.int64, device="cuda")
        self.sink = torch.zeros(2, dtype=torch.int32, device="cuda")  # room for a 64-bit index

    def _stream(self):
        return self.torch.cuda.current_stream().cuda_stream

    def _sync(self, what: str) -> None:
        err = self.lib.grader_synchronize() or self.lib.grader_last_error()
        if err:
            raise RuntimeError(f"CUDA error in {what}: {self.lib.grader_error_string(err).decode()}")

    def facts(self) -> dict:
        """What the driver reports about the GPU (sizes per SM, L2), plus its name."""
        p = self.props
        get = lambda name: getattr(p, name, None)  # noqa: E731 (fields vary with the torch version)
        return {
            "name": p.name,
            "compute_capability": f"{p.major}.{p.minor}",
            "sms": p.multi_processor_count,
            "memory_GB": round(p.total_memory / 1e9, 1),
            "l2_MB": (get("L2_cache_size") or 0) / MB,
            "shared_per_sm_KB": (get("shared_memory_per_multiprocessor") or 0) / KB,
            "shared_per_block_optin_KB": (get("shared_memory_per_block_optin") or 0) / KB,
            "registers_per_sm": get("regs_per_multiprocessor"),
            "max_threads_per_sm": get("max_threads_per_multi_processor"),
            "warp_size": get("warp_size"),
        }

    def max_footprint(self) -> int:
        free, _ = self.torch.cuda.mem_get_info()
        return min(64 * GB, free // 2)

    def chase(
        self, footprint: int, *, steps: int = 20000, carveout: int = -1, l2_only: bool = False, stride: int = 128
    ) -> dict:
        """Cycles per dependent global load for a chain of `footprint` bytes (one thread, one SM)."""
        torch = self.torch
        wide = footprint > WIDE
        if wide:  # a few million nodes at most: the chain is built in one go, and every step is a random page anyway
            stride = max(stride, footprint >> 22)
        nxt, start = pointer_chain(footprint, stride, device="cuda", wide=wide)
        nodes = nxt.numel() // (stride // nxt.element_size())
        # a warm pass over the whole chain first, so that a chain that fits in L2 (60 MB on an H200) is
        # timed from L2; past 128 MB the timed steps are cold misses anyway
        warm = nodes if footprint <= 128 * MB else 0
        start_ev, end_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start_ev.record()
        if wide:
            self.lib.chase_global64(
                nxt.data_ptr(), start, steps, self.cycles.data_ptr(), self.sink.data_ptr(), self._stream()
            )
        else:
            self.lib.chase_global(
                nxt.data_ptr(),
                start,
                steps,
                warm,
                int(l2_only),
                carveout,
                self.cycles.data_ptr(),
                self.sink.data_ptr(),
                self._stream(),
            )
        end_ev.record()
        self._sync("chase_global")
        cycles = int(self.cycles.item())
        ms = start_ev.elapsed_time(end_ev)
        del nxt
        if footprint > GB:  # hand the memory back, so that the next, larger chain still fits
            torch.cuda.empty_cache()
        return {
            "footprint": footprint,
            "cycles": cycles / steps,
            "steps": steps,
            "carveout": carveout,
            "l2_only": l2_only,
            "stride": stride,
            "clock_MHz": cycles / (ms * 1e3) if warm == 0 and ms > 1 else None,
        }

    def chase_shared(self, n: int = 1024, steps: int = 20000) -> float:
        """Cycles per dependent shared-memory load (a random cycle through n words)."""
        nxt, start = pointer_chain(4 * n, 4, device="cuda")
        self.lib.chase_shared(
            nxt.data_ptr(), n, start, steps, self.cycles.data_ptr(), self.sink.data_ptr(), self._stream()
        )
        self._sync("chase_shared")
        return int(self.cycles.item()) / steps

    def latency_table(self) -> dict[str, float]:
        """{level: cycles per dependent load}: shared memory, then global loads served by L1, L2, HBM
        and, at the largest footprint this GPU's memory allows, HBM with TLB misses."""
        table = {"shared memory": self.chase_shared()}
        for level, fp in TABLE_FOOTPRINTS.items():
            table[level] = self.chase(fp)["cycles"]
        big = self.max_footprint()
        table[f"HBM, {big // GB} GB footprint"] = self.chase(big, steps=5000)["cycles"]
        return table

    def latency_sweep(self, footprints=None, carveout: int = -1) -> list[dict]:
        big = self.max_footprint()
        return [
            self.chase(fp, carveout=carveout, steps=20000 if fp <= 64 * MB else 5000)
            for fp in (footprints or SWEEP_FOOTPRINTS)
            if fp <= big
        ]

    def bandwidth_sweep(self, sizes=None) -> list[dict]:
        """dst = src for buffers of each size (bytes each): GB/s counting reads and writes. Small
        buffers stay in L2 between runs (no flush here), large ones stream from HBM."""
        from grader.run.timing import time_gpu

        torch = self.torch
        out = []
        for size in sizes or BANDWIDTH_SIZES:
            if 3 * size > torch.cuda.mem_get_info()[0]:
                continue
            src = torch.ones(size // 4, device="cuda")
            dst = torch.empty_like(src)
            blocks = max(1, min(self.props.multi_processor_count * 8, src.numel() // 4 // 256))
            fn = lambda: self.lib.copy_floats(src.data_ptr(), dst.data_ptr(), src.numel(), blocks, self._stream())  # noqa: E731, F821 (used before the del below)
            t = time_gpu({"copy": fn}, flush=False, max_seconds=1.0)["copy"]
            self._sync("copy_floats")
            out.append({"bytes": size, "GBs": 2 * size / (t.median_ms * 1e-3) / 1e9, "ms": t.median_ms})
            del src, dst
        return out

    def fma_rate(self, warps=(1, 2, 3, 4, 6, 8, 16, 32), iters: int = 4096) -> list[dict]:
        """FMAs per cycle of one SM running one block of w warps (8 independent FMAs per thread per step)."""
        out_buf = self.torch.empty(32 * max(warps), device="cuda")
        rows = []
        for w in warps:
            self.lib.fma_rate(w, iters, out_buf.data_ptr(), self.cycles.data_ptr(), self._stream())
            self._sync("fma_rate")
            rows.append({"warps": w, "fma_per_cycle": 32 * w * 8 * iters / int(self.cycles.item())})
        return rows


# ---------------------------------------------------------------------------- committed results
def h200(path: str | os.PathLike | None = None) -> dict:
    """The committed H200 run of benchmarks/gpu_machine.py. Its "status" is "measured", or
    "placeholder" while no H200 run has been committed (then the figures are None)."""
    return json.loads(Path(path or RESULTS).read_text())


# An SM's four sub-partitions have 32 FP32 lanes each: at most 128 FMAs per cycle (NVIDIA's H100 whitepaper).
FP32_LANES_PER_SM = 128


def plausible_fma_rates(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(kept, left out): fma_rate rows at most FP32_LANES_PER_SM per cycle, and those above it, which only
    a timing error can give (the committed run timed a block with warp 0's clock alone: 207 at 16 warps)."""
    kept = [r for r in rows if r["fma_per_cycle"] <= FP32_LANES_PER_SM]
    return kept, [r for r in rows if r not in kept]


def fp32_peak_tflops(run: dict) -> float:
    """SMs x 128 FP32 lanes x 2 FLOP (an FMA) x the max SM clock nvidia-smi reported, in TFLOP/s."""
    max_mhz = float(run["nvidia_smi_before"].split(",")[1].split()[0])  # "SM clock, max SM clock, ..."
    return run["gpu"]["sms"] * FP32_LANES_PER_SM * 2 * max_mhz * 1e6 / 1e12


def copy_tbs(run: dict) -> float | None:
    """The run's copy bandwidth from HBM: the best of its buffers of 256 MB and more (far past the
    60 MB L2), read + write, in TB/s; None without a bandwidth sweep."""
    rates = [r["GBs"] for r in run.get("bandwidth_sweep") or [] if r["bytes"] >= 256 * MB]
    return max(rates) / 1e3 if rates else None
