"""The grader's verdicts on known-good and known-bad kernels (tests/submissions/*.cu, each
with a header comment saying what is wrong), and on every reference kernel in kernels/.

On a machine without a GPU these run on the CPU backend (correctness only); on a GPU the
same submissions run on CUDA, where a few bugs show differently (a race or a divergent
barrier may give garbage, a hang or, by luck, the right answer) and speed is graded too.
All submissions are graded once, two at a time, by a module fixture; each test then
asserts one verdict.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import pytest

import torch

HAS_GPU = torch.cuda.is_available()  # not from conftest: tests/cpu/ has a conftest of its own

ROOT = Path(__file__).resolve().parent.parent
SUBS = ROOT / "tests" / "submissions"
KERNELS = ROOT / "kernels"
BACKEND = "cuda" if HAS_GPU else "cpu"
HANG_TIMEOUT_S = 6.0

# file -> (compiled, correct, passed, message regex), on the CPU backend. Exercise: naive unless SUB_EXERCISE says otherwise.
CPU_EXPECT = {
    "good_naive.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    "good_reversed_k.cu": (True, True, True, r"^correct on every shape"),
    "good_persistent_queue.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    "good_tiled_comment_mentions_cublas.cu": (True, True, True, r"^correct on every shape"),
    # B read with the wrong row stride: on the CPU backend, a read past B's end; on a GPU, wrong results
    "wrong_index.cu": (
        True,
        False,
        False,
        r"^wrong results on \d+ of \d+ inputs|out-of-bounds read of B at wrong_index\.cu:7",
    ),
    "transposed_operand.cu": (True, False, False, r"^wrong results on \d+ of \d+ inputs"),
    "off_by_one_k.cu": (True, False, False, r"^wrong results on (\d+) of \1 inputs"),
    "unwritten_tail.cu": (True, False, False, r"^wrong results on (\d+) of \1 inputs"),
    "missing_bounds.cu": (True, False, False, r"wrote past the end of C|crashed|out of bounds|out-of-bounds"),
    "oob_write.cu": (True, False, False, r"crashed|out of bounds|out-of-bounds|illegal memory access"),
    "past_end_write.cu": (True, False, False, r"^at shape 1x1x1: wrote past the end of C: 1 element"),
    # the read is reported where it happens (the guard zone after A); on a GPU its NaN marker shows in C
    "oob_read.cu": (True, False, False, r"out-of-bounds read of (A|B) at oob_read\.cu:7: thread \(\d+,\d+,0\) reads"),
    "missing_barrier.cu": (True, False, False, r"race"),
    "divergent_barrier.cu": (True, False, False, r"divergent barrier"),
    "reduced_precision.cu": (True, False, False, r"^wrong results on (\d+) of \1 inputs"),
    # on the CPU backend the kernel's store into A is reported when it happens; on a GPU the digest after the call
    "input_tampering.cu": (True, False, False, r"(^|: )the kernel wrote to its input A\b"),
    "result_replay.cu": (True, False, False, r"exactly the answer it gave for an earlier input"),
    "hang.cu": (
        True,
        False,
        False,
        r"^the kernel did not finish (at shape 1x1x1: killed after the time limit"
        r"|within the time limit on the CPU backend, at shape 1x1x1)",
    ),
    "compile_error.cu": (False, False, False, r"^does not compile:\ncompile_error\.cu\(?:?7"),
    "wrong_launcher_name.cu": (True, False, False, r"launcher `gemm` not found"),
    "forbidden_cublas.cu": (
        False,
        False,
        False,
        r"^forbidden: .*\n.*forbidden_cublas\.cu:3: #include <cublas_v2\.h>: cuBLAS",
    ),
    "forbidden_torch.cu": (False, False, False, r"^forbidden: .*\n.*:3: #include <ATen/ATen\.h>: torch"),
    "forbidden_cutlass.cu": (
        False,
        False,
        False,
        r"^forbidden: .*\n.*:3: #include <cutlass/gemm/device/gemm\.h>: CUTLASS",
    ),
    "forbidden_dlopen.cu": (False, False, False, r"^forbidden: .*\n.*:4: dlopen: loading libraries"),
    "borrow_interpreter.cu": (False, False, False, r"^forbidden: (.*\n)*.*dlsym: loading libraries"),
    "borrow_library_files.cu": (False, False, False, r"^forbidden: (.*\n)*.*<dlfcn\.h>: loading libraries"),
    "empty.cu": (False, False, False, r"^empty\.cu is empty"),
    "binary.cu": (False, False, False, r"^binary\.cu: not a UTF-8 text file"),
    # bugs only the shapes drawn from the seed meet (grader.spec.shapes); the seed is in the message
    # (a lane past column N writes its neighbour row's element: on the CPU backend that write-write race on C
    # may be caught before the write past C's end)
    "fast_path_k32.cu": (
        True,
        False,
        False,
        r"(wrote past the end of C|crashed|out-of-bounds|global-memory race on C)(.|\n)*--seed 1234",
    ),
    "float4_a_checks_n.cu": (True, False, False, r"misaligned address(.|\n)*--seed 1234"),
    "row_cache_128.cu": (
        True,
        False,
        False,  # first wrong at a K > 128
        r"^wrong results on \d+ of \d+ inputs.\nC: .* at shape \d+x\d+x(1[3-9]\d|[2-9]\d\d|\d{4})\b",
    ),
    # backend detection: the CPU backend defines nvcc's macros and none of its own
    "backend_detect_nvcc.cu": (True, False, False, r"^wrong results on (\d+) of \1 inputs"),
    "backend_detect_emu.cu": (
        False,
        False,
        False,
        r"^forbidden: .*\n.*backend_detect_emu\.cu:\d+: CUDA_EMU: the CPU backend's",
    ),
    "splitk_exch_then_add.cu": (True, False, False, r"global-memory race on C\[0\]\[0\].*updated \(atomicExch\)"),
    "host_memcpy_chk.cu": (False, False, False, r"^forbidden: .*\n.*host_memcpy_chk\.cu:\d+: calls __memcpy_chk"),
    "row_cache_512.cu": (
        True,
        False,
        False,  # first wrong at the drawn long shape (K > 512)
        r"^wrong results on \d+ of \d+ inputs.\nC: .* at shape \d+x\d+x(5[1-9]\d|[6-9]\d\d|\d{4})\b",
    ),
    "relu_flat_no_tail.cu": (
        True,
        False,
        False,
        r"wrote past the end of (Y|dX|mask)|out-of-bounds read of (X|dY|mask) at relu_flat_no_tail\.cu:\d+",
    ),
    # the relu_mask contract: forward's outputs are read before backward runs, and backward gets
    # a mask the grader made, with X and Y poisoned
    "relu_lazy_forward.cu": (True, False, False, r"^wrong results on (\d+) of \1 inputs.\nY: .*never written"),
    "relu_backward_ignores_mask.cu": (True, False, False, r"^wrong results on \d+ of \d+ inputs.\ndX: "),
    # ReLU and epilogue mistakes: hints of their own (HINTS)
    "relu_bit_order.cu": (True, False, False, r"^wrong results on \d+ of \d+ inputs.\nmask: \d+ of \d+ words wrong"),
    "relu_mask_ge.cu": (True, False, False, r"^wrong results on \d+ of \d+ inputs.\nmask: "),
    "relu_no_word_guard.cu": (True, False, False, r"wrote past the end of mask|words wrong"),
    "gemm_relu_no_bias.cu": (True, False, False, r"^wrong results on (\d+) of \1 inputs.\nC: "),
    # mlp_step: relu_backward runs on a mask the grader made, with gemm_relu's C poisoned; gemm on its own output
    "mlp_relu_backward_sign.cu": (True, False, False, r"^wrong results on \d+ of \d+ inputs.\ndX: "),
    "mlp_relu_backward_stash.cu": (True, False, False, r"^wrong results on \d+ of \d+ inputs.\ndX: "),
    "mlp_gemm_square_only.cu": (True, False, False, r"^wrong results on \d+ of \d+ inputs.\ngemm's C: "),
    # pipelines of asynchronous copies (<cuda_pipeline.h>): on the CPU backend a copy lands only when a
    # __pipeline_wait_prior covers it, and an access to it before then is reported
    "good_pipelined_2stage.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    "good_pipelined_3stage.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    "pipeline_missing_wait.cu": (
        True,
        False,
        False,
        r"reads (As|Bs)\[.*asynchronous copy into it .*(has landed|still in flight)(.|\n)*__pipeline_wait_prior",
    ),
    "pipeline_missing_sync.cu": (
        True,
        False,
        False,
        r"(shared-memory race on (As|Bs)\[|still in flight)(.|\n)*__syncthreads\(\)",
    ),
    "pipeline_wrong_stage.cu": (
        True,
        False,
        False,
        r"(still in flight|shared-memory race on (As|Bs)\[)(.|\n)*(ring index|wrong stage)",
    ),
    "pipeline_misaligned.cu": (
        True,
        False,
        False,
        r"__pipeline_memcpy_async at line 15: misaligned address: the global source(.|\n)*--seed 1234",
    ),
    # what only the CPU backend's device-memory and atomic checks see: host code doing the kernel's work
    # (on a GPU it faults, or is far too slow), a store racing with atomics, an input written and restored
    "host_side_gemm.cu": (
        True,
        False,
        False,
        r"the launcher's host code read A \(device memory\) at host_side_gemm\.cu:11: on a GPU that read faults",
    ),
    # host code outside the instrumentation: the runner's buffers are the runtime's device memory, which faults
    "host_unhooked_write.cu": (
        True,
        False,
        False,
        # the device-to-host copy of A is refused first (its store into C: tests/cpu/test_device_memory.py)
        r"cudaMemcpy at host_unhooked_write\.cu:24 copies A \(device memory\) to host memory",
    ),
    "host_unhooked_read.cu": (
        True,
        False,
        False,
        r"the launcher's host code read A \(device memory\) at host_unhooked_read\.cu:22: on a GPU that read faults",
    ),
    "host_memcpy_gemm.cu": (
        True,
        False,
        False,
        # the device-to-host copy of A is refused first (the copy into C: tests/cpu/test_device_memory.py)
        r"cudaMemcpy at host_memcpy_gemm\.cu:11 copies A \(device memory\) to host memory",
    ),
    "splitk_store_then_atomic.cu": (
        True,
        False,
        False,
        r"global-memory race on C\[.*atomically updates it at splitk_store_then_atomic\.cu:13, .* wrote it at "
        r"splitk_store_then_atomic\.cu:12",
    ),
    "input_scratch_restore.cu": (
        True,
        False,
        False,
        r"the kernel wrote to its input A \(A\[\d+\]\[\d+\], at input_scratch_restore\.cu:16, thread",
    ),
    "good_splitk_atomic.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    # pitched copies (cudaMemcpy2D & co.): device to device; a pitch below the width fails as on a GPU
    "good_memcpy2d_pitched.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    "good_mallocpitch_staged_a.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    "memcpy2d_pitch_in_elements.cu": (True, False, False, r"^wrong results on (\d+) of \1 inputs.\nC: .*never written"),
    # an output read before anything wrote it in the launcher call, which the grader's poison (NaN, all-ones
    # mask words) made right
    "relu_mask_reads_output_first.cu": (
        True,
        False,
        False,
        r"relu_forward: the kernel reads mask\[0\]\[0\] at relu_mask_reads_output_first\.cu:14 .*before anything "
        r"wrote it in this launcher call",
    ),
    "relu_mask_atomic_and.cu": (
        True,
        False,
        False,
        r"relu_forward: the kernel atomically updates mask\[0\]\[0\] at relu_mask_atomic_and\.cu:11 .*before "
        r"anything wrote it",
    ),
    "gemm_nan_means_unwritten.cu": (
        True,
        False,
        False,
        r"the kernel reads C\[0\]\[0\] at gemm_nan_means_unwritten\.cu:10 .*before anything wrote it",
    ),
    "good_relu_mask_memset_then_atomic_and.cu": (True, True, True, r"^correct on every shape; access counts"),
    # races through cudaMalloc blocks (watched as the outputs are during a launch), and the order a flag gives
    "splitk_scratch_plain_add.cu": (
        True,
        False,
        False,
        r"global-memory race on element \d+ \(4-byte words\) of the cudaMalloc block allocated at line 21: .* of "
        r"block \(0,0,1\) reads it at splitk_scratch_plain_add\.cu:11, but .* of block \(0,0,0\) wrote it",
    ),
    "block_order_scratch.cu": (
        True,
        False,
        False,
        r"global-memory race on element \d+ .* of the cudaMalloc block allocated at line 21: .* reads it at "
        r"block_order_scratch\.cu:13, but .* of block \(0,0,0\) wrote it at block_order_scratch\.cu:7(.|\n)*"
        r"Blocks run in any order",
    ),
    "splitk_last_slice_reads_scratch.cu": (
        True,
        False,
        False,
        r"race on element 0 .* of block \(0,0,2\) reads it at splitk_last_slice_reads_scratch\.cu:13, but .* wrote "
        r"it at splitk_last_slice_reads_scratch\.cu:12",
    ),
    "scratch_zeroed_by_block0.cu": (
        True,
        False,
        False,
        r"race on element 0 .* atomically updates it at scratch_zeroed_by_block0\.cu:15, but .* of block \(0,0,0\) "
        r"wrote it at scratch_zeroed_by_block0\.cu:7",
    ),
    "good_serial_splitk_flag.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    "good_splitk_last_block_fence.cu": (
        True,
        True,
        True,
        r"^correct on every shape; access counts at \d+x\d+x\d+ meet",
    ),
    "splitk_last_block_no_fence.cu": (
        True,
        False,
        False,
        r"race on element 0 .* of block \(0,0,2\) reads it at splitk_last_block_no_fence\.cu:22, but .* of block "
        r"\(0,0,0\) wrote it at splitk_last_block_no_fence\.cu:12",
    ),
    # the access profile's sample: one block doing all of the work (uncoalesced) where the sample rarely looks;
    # every block is counted then
    "block0_does_all_uncoalesced.cu": (
        True,
        True,
        False,
        r"access profile at \d+x\d+x\d+ misses this exercise's idea \(CPU backend: every block\):\n.*"
        r"sectors_over_ideal_ld",
    ),
    "middle_block_does_all_uncoalesced.cu": (
        True,
        True,
        False,
        r"access profile at \d+x\d+x\d+ misses this exercise's idea \(CPU backend: every block\):\n.*"
        r"sectors_over_ideal_ld",
    ),
    # a plain host variable in device code: nvcc refuses it, and so does the CPU backend
    "host_global_read_in_kernel.cu": (
        False,
        False,
        False,
        r"^does not compile:\n(.|\n)*host_global_read_in_kernel\.cu[:(]9\b(.|\n)*(is a host variable|g_unroll\S* is "
        r"undefined in device code)",
    ),
    "host_table_in_device_function.cu": (
        False,
        False,
        False,
        r"^does not compile:\n(.|\n)*host_table_in_device_function\.cu[:(]6\b(.|\n)*(is a host variable|g_scale\S* "
        r"is undefined in device code)",
    ),
    "good_host_globals_kept_on_host.cu": (True, True, True, r"^correct on every shape"),
    # __device__ / __constant__ variables are device memory: host code that touches them reaches its own copy
    "gemm_relu_host_fills_device_arrays.cu": (
        True,
        False,
        False,
        r"cudaMemcpy at gemm_relu_host_fills_device_arrays\.cu:17 copies A \(device memory\) to host memory",
    ),
    "memcpy_device_variable_by_name.cu": (
        True,
        False,
        False,
        r"cudaMemcpy at memcpy_device_variable_by_name\.cu:24 copies from the __device__ variable gC by its name",
    ),
    "block_order_device_array.cu": (
        True,
        False,
        False,
        r"global-memory race on gB \(4-byte word \d+; a __device__ variable, line 4\): .* reads it at "
        r"block_order_device_array\.cu:13, but .* of block \(0,0,0\) wrote it at block_order_device_array\.cu:7",
    ),
    "good_device_variable_queue.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    # host work that reaches an output through a kernel's copy of the host data it put in device memory
    "host_compute_kernel_copy.cu": (
        True,
        False,
        False,
        # refused at the device-to-host copy of A (the end-of-call match: tests/cpu/test_device_memory.py)
        r"cudaMemcpy at host_compute_kernel_copy\.cu:12 copies A \(device memory\) to host memory",
    ),
    "host_compute_via_symbol.cu": (
        True,
        False,
        False,
        r"cudaMemcpy at host_compute_via_symbol\.cu:14 copies A \(device memory\) to host memory",
    ),
    "good_uploaded_column_table.cu": (True, True, True, r"^correct on every shape; access counts at \d+x\d+x\d+ meet"),
    # loads of one sector (broadcasts) padding an uncoalesced kernel: left out of sectors_over_ideal_ld
    "profile_padding_broadcasts.cu": (
        True,
        True,
        False,
        r"misses this exercise's idea(.|\n)*sectors_over_ideal_ld = 8",
    ),
    "profile_padding_sector_loads.cu": (
        True,
        True,
        False,
        r"misses this exercise's idea(.|\n)*sectors_over_ideal_ld = 5",
    ),
    "splitk_flag_released_early.cu": (
        True,
        False,
        False,
        r"global-memory race on C\[0\]\[0\]: .* of block \(0,0,1\) reads it at splitk_flag_released_early\.cu:20, but "
        r".* of block \(0,0,0\) wrote it at splitk_flag_released_early\.cu:19",
    ),
    # the stream contract: the CPU backend hands the launcher a stream of its own and reports work elsewhere
    "stream_ignored.cu": (
        True,
        False,
        False,
        r"the launcher launches kernel k on the default stream \(0\) at stream_ignored\.cu:13, but the launcher's "
        r"stream is stream 0x",
    ),
    # reads outside a buffer whose values are thrown away: the result is right, the read is reported with its line
    "tile_load_k_guard_only.cu": (
        True,
        False,
        False,
        r"out-of-bounds read of (A|B) at tile_load_k_guard_only\.cu:(9|10): thread .* past the end of the",
    ),
    "bias_read_before_column_test.cu": (
        True,
        False,
        False,
        r"gemm_relu: out-of-bounds read of bias at bias_read_before_column_test\.cu:7: thread \(\d+,0,0\) reads "
        r"bias\[\d+\], past the end of the \d+-element array",
    ),
    # limits a GPU enforces at a launch
    "launch_bounds_exceeded.cu": (
        True,
        False,
        False,
        r"kernel k was launched with 256 threads per block, more than its __launch_bounds__\(128\) at "
        r"launch_bounds_exceeded\.cu:3 allows",
    ),
    "launch_bounds_on_declaration.cu": (
        True,
        False,
        False,
        r"kernel k was launched with 256 threads per block, more than its __launch_bounds__\(64\) at "
        r"launch_bounds_on_declaration\.cu:4 allows",
    ),
}
# issue 22: what the student cannot predict (the profile shape, the inputs' scale and special values, sizes past
# 2^18 floats) and hints that named the wrong cause
CPU_EXPECT |= {
    "profile_shape_tiled_at_256.cu": (True, True, False, r"access profile at \d+x\d+x\d+ misses(.|\n)*bytes_per_flop"),
    "profile_shape_gemm_relu_fused_at_256.cu": (
        True,
        True,
        False,
        r"access profile at \d+x\d+x\d+ misses(.|\n)*C_reads_per_element",
    ),
    # ...and the profile shape's other tells: every dimension a multiple of 128, the last call
    "profile_shape_tiled_when_aligned.cu": (
        True,
        True,
        False,
        r"access profile at \d+x\d+x\d+ misses this exercise's idea \(no dimension aligned(.|\n)*bytes_per_flop",
    ),
    "profile_shape_gemm_relu_last_call.cu": (
        True,
        True,
        False,
        r"access profile at \d+x\d+x\d+ misses(.|\n)*C_reads_per_element",
    ),
    "gemm_skips_tiny_a.cu": (True, False, False, r"^wrong results on \d+ of \d+ inputs.\nC: .*\(inputs: A x 2\^-24"),
    "relu_arithmetic_max.cu": (
        True,
        False,
        False,
        r"^wrong results on \d+ of \d+ inputs.\nY: .*\(inputs: X with \+-inf",
    ),
    "device_stage_wrapped.cu": (True, False, False, r"race on stage|wrong results"),
    "uninitialised_accumulator.cu": (True, False, False, r"^wrong results on (\d+) of \1 inputs"),
    "shared_same_element_store.cu": (True, False, False, r"shared-memory race on As\["),
    "relu_mask_or_race.cu": (True, False, False, r"global-memory race on mask\["),
    "rows_on_grid_y.cu": (True, False, False, r"^at shape (6[5-9]\d{3})x\d+x\d+: gemm: invalid launch configuration"),
    "block_per_row.cu": (
        True,
        False,
        False,
        r"^at shape [13]x\d{4}x\d: gemm: invalid launch configuration.*at most 1024",
    ),
}
# host work fed by device data: no device-to-host copy, no kernel argument pointing to host memory, in a launcher call
CPU_EXPECT |= {
    "host_negated_copy.cu": (
        True,
        False,
        False,
        r"cudaMemcpy at host_negated_copy\.cu:12 copies A \(device memory\) to host memory: the launcher's host code "
        r"may not read device data",
    ),
    "host_compute_kernel_args.cu": (
        True,
        False,
        False,
        r"cudaMemcpy at host_compute_kernel_args\.cu:13 copies A \(device memory\) to host memory",
    ),
    "host_pointer_in_kernel.cu": (
        True,
        False,
        False,
        r"the launcher's host code launches kernel fetch at host_pointer_in_kernel\.cu:14 with host memory as its "
        r"argument 2 .*: on a GPU the kernel's accesses through it fault",
    ),
}
# exercise of each submission (default naive)
SUB_EXERCISE = {
    "relu_flat_no_tail.cu": "relu_mask",
    "relu_lazy_forward.cu": "relu_mask",
    "relu_backward_ignores_mask.cu": "relu_mask",
    "relu_bit_order.cu": "relu_mask",
    "relu_mask_ge.cu": "relu_mask",
    "relu_no_word_guard.cu": "relu_mask",
    "gemm_relu_no_bias.cu": "gemm_relu",
    "mlp_relu_backward_sign.cu": "mlp_step",
    "host_memcpy_chk.cu": "mlp_step",
    "mlp_relu_backward_stash.cu": "mlp_step",
    "mlp_gemm_square_only.cu": "mlp_step",
    "good_pipelined_2stage.cu": "tiled",
    "good_pipelined_3stage.cu": "tiled",
    "pipeline_missing_wait.cu": "tiled",
    "pipeline_missing_sync.cu": "tiled",
    "pipeline_wrong_stage.cu": "tiled",
    "pipeline_misaligned.cu": "tiled",
    "relu_mask_reads_output_first.cu": "relu_mask",
    "relu_mask_atomic_and.cu": "relu_mask",
    "good_relu_mask_memset_then_atomic_and.cu": "relu_mask",
    "gemm_relu_host_fills_device_arrays.cu": "gemm_relu",
    "bias_read_before_column_test.cu": "gemm_relu",
}
SUB_EXERCISE |= {
    "profile_shape_tiled_at_256.cu": "tiled",
    "profile_shape_gemm_relu_fused_at_256.cu": "gemm_relu",
    "profile_shape_tiled_when_aligned.cu": "tiled",
    "profile_shape_gemm_relu_last_call.cu": "gemm_relu",
    "relu_arithmetic_max.cu": "relu_mask",
    "relu_mask_or_race.cu": "relu_mask",
}
# red team A: what the access profile counts. Every global access to device memory (cudaMalloc'd or __device__
# scratch, not only the launcher's buffers); an intermediate stored and read back is a second pass; every kernel
# of a role counts; operand loads from any source
CPU_EXPECT |= {
    "scratch_copy_naive.cu": (True, True, False, r"access profile at(.|\n)*bytes_per_flop = "),
    "scratch_copy_naive_cf.cu": (True, True, False, r"access profile at(.|\n)*bytes_per_flop = "),
    "scratch_device_array_naive.cu": (True, True, False, r"access profile at(.|\n)*bytes_per_flop = "),
    "gemm_relu_scratch_two_pass.cu": (
        True,
        True,
        False,
        r"access profile at(.|\n)*C_(writes|reads)_per_element = [\d.]+(.|\n)*scratch",
    ),
    "relu_split_backward.cu": (
        True,
        True,
        False,
        r"access profile at(.|\n)*(backward|forward)_bytes_\w+_per_element = ",
    ),
    "r1d_a_from_global.cu": (True, True, False, r"access profile at(.|\n)*operand_loads_per_fma = "),
}
SUB_EXERCISE |= {
    "scratch_copy_naive.cu": "tiled",
    "scratch_copy_naive_cf.cu": "conflict_free",
    "scratch_device_array_naive.cu": "tiled",
    "gemm_relu_scratch_two_pass.cu": "gemm_relu",
    "relu_split_backward.cu": "relu_mask",
    "r1d_a_from_global.cu": "register_1d",
}
# on a GPU a few bugs are undefined behaviour: any failing verdict will do
GPU_ANY_FAILURE = {
    "memcpy2d_pitch_in_elements.cu",  # the CUDA runtime refuses the pitch (invalid argument): failed, another message
    "missing_barrier.cu",
    "missing_bounds.cu",
    "oob_write.cu",
    "wrong_index.cu",
    "oob_read.cu",
    "fast_path_k32.cu",
    "pipeline_misaligned.cu",  # a GPU's launch error: 'misaligned address'
    "host_side_gemm.cu",  # host code reading device memory: a crash
    "host_unhooked_read.cu",
    "host_unhooked_write.cu",
    "host_memcpy_gemm.cu",  # correct, but far too slow (or a time-out) at the timed size
    "block0_does_all_uncoalesced.cu",  # one block does all the work: far too slow
    "middle_block_does_all_uncoalesced.cu",
    "gemm_relu_host_fills_device_arrays.cu",  # the kernel copies the device's arrays, which host code never set
    "memcpy_device_variable_by_name.cu",  # cudaMemcpy of the host's copy (or an invalid argument)
    "host_compute_kernel_copy.cu",  # host work: far too slow at the timed size
    "host_compute_via_symbol.cu",
    "host_negated_copy.cu",  # host work: far too slow at the timed size
    "host_compute_kernel_args.cu",
    "host_pointer_in_kernel.cu",  # the kernel's access to host memory faults
    "profile_padding_broadcasts.cu",  # uncoalesced: too slow
    "profile_padding_sector_loads.cu",
    "launch_bounds_exceeded.cu",  # the GPU refuses the launch: C stays unwritten
    "launch_bounds_on_declaration.cu",
}  # a GPU's NaN loses the marker payload: plain "wrong results" there
# ...and a barrier after an early return usually works on sm_70+ (exited threads count as
# arrived): only the CPU backend can call it wrong; on a GPU any verdict is accepted
GPU_UNDEFINED = {"divergent_barrier.cu"}
# ...and a launch on the default stream: right on a GPU wherever the caller's stream is the default one too
GPU_UNDEFINED |= {"stream_ignored.cu"}
# ...and a read past a buffer whose value is never used: right on a GPU unless it faults
GPU_UNDEFINED |= {"tile_load_k_guard_only.cu", "bias_read_before_column_test.cu"}
# ...as are the pipeline bugs: whether a copy lands before the read that races with it is timing
GPU_UNDEFINED |= {"pipeline_missing_wait.cu", "pipeline_missing_sync.cu", "pipeline_wrong_stage.cu"}
# ...and whether slice 1's atomicAdd lands before slice 0's store; a row of A doubled and restored by the one block
# that reads it gives the right answer there, and the digest of A after the call sees it restored
GPU_UNDEFINED |= {"splitk_store_then_atomic.cu", "input_scratch_restore.cu"}
# ...and mlp_step is correctness-only: on a GPU its host work (a fortified memcpy is fine there) passes (open)
GPU_UNDEFINED |= {"host_memcpy_chk.cu"}
# ...and whether slice 0's atomicExch comes before the other slices' atomicAdd
GPU_UNDEFINED |= {"splitk_exch_then_add.cu"}
# ...and a tiled path taken only where every dimension is a multiple of 128: the timed shape (4096^3) is one
GPU_UNDEFINED |= {"profile_shape_tiled_when_aligned.cu"}
# ...and an uninitialised accumulator holds whatever the register held (often 0: right by luck)
GPU_UNDEFINED |= {"uninitialised_accumulator.cu"}
# on a GPU the profile-shape cheats are too slow at the timed size, and the races give plain wrong results
GPU_ANY_FAILURE |= {
    "profile_shape_tiled_at_256.cu",
    "profile_shape_gemm_relu_fused_at_256.cu",
    "profile_shape_gemm_relu_last_call.cu",
    "device_stage_wrapped.cu",
    "shared_same_element_store.cu",
    "relu_mask_or_race.cu",
    "rows_on_grid_y.cu",  # the CUDA runtime's own words: invalid configuration argument
    "block_per_row.cu",
}
# ...and an output read before it is written: right wherever the buffer holds what the grader's poison holds
GPU_UNDEFINED |= {"relu_mask_reads_output_first.cu", "relu_mask_atomic_and.cu", "gemm_nan_means_unwritten.cu"}
# ...and races between blocks through scratch memory, or a flag that orders too little: timing (a missing fence
# seldom shows)
GPU_UNDEFINED |= {
    "splitk_scratch_plain_add.cu",
    "block_order_scratch.cu",
    "splitk_last_slice_reads_scratch.cu",
    "scratch_zeroed_by_block0.cu",
    "splitk_last_block_no_fence.cu",
    "block_order_device_array.cu",
    "splitk_flag_released_early.cu",
}
# red team A's on a GPU: naive or uncoalesced, too slow at the timed size; an unfused gemm_relu and a tiled kernel
# graded as register_1d are as fast as timing finds them (the CPU backend's counts decide here)
GPU_ANY_FAILURE |= {
    "scratch_copy_naive.cu",
    "scratch_copy_naive_cf.cu",
    "scratch_device_array_naive.cu",
    "relu_split_backward.cu",
}
GPU_UNDEFINED |= {"gemm_relu_scratch_two_pass.cu", "r1d_a_from_global.cu"}
# a kernel that tells the counted blocks or runs by timing itself: clock64() around its own shared loads, or events
# around a probe kernel (the CPU backend's clocks are virtual now). On a GPU nothing is recorded and what the timing
# finds depends on what the probe picks there: any verdict
CPU_EXPECT |= {
    "profile_sampled_blocks_clock64.cu": (True, True, False, r"access profile at(.|\n)*bytes_per_flop = "),
    "profile_detect_by_timing.cu": (True, True, False, r"access profile at(.|\n)*bytes_per_flop = "),
    "profile_detect_by_heap.cu": (True, True, False, r"access profile at(.|\n)*bytes_per_flop = "),
}
SUB_EXERCISE |= {
    n: "tiled"
    for n in ("profile_sampled_blocks_clock64.cu", "profile_detect_by_timing.cu", "profile_detect_by_heap.cu")
}
GPU_UNDEFINED |= {"profile_sampled_blocks_clock64.cu", "profile_detect_by_timing.cu", "profile_detect_by_heap.cu"}
HINTS = {  # file -> regex on the hint (either backend)
    "wrong_index.cu": r"wrong dimension|uses the right dimension",
    "unwritten_tail.cu": r"never written",
    "off_by_one_k.cu": r"loop over k",
    "reduced_precision.cu": r"half, bfloat16 or TF32",
    "result_replay.cu": r"Do not keep results between calls",
    "input_tampering.cu": r"Only the output",
    "input_scratch_restore.cu": r"Only the output",
    "host_side_gemm.cu": r"Launch a kernel",
    "host_memcpy_gemm.cu": r"Launch a kernel",
    "past_end_write.cu": r"out-of-bounds write",
    "float4_a_checks_n.cu": r"K % 4 == 0",
    "pipeline_misaligned.cu": r"__pipeline_memcpy_async\) needs an address aligned(.|\n)*K % 4 == 0",
    "row_cache_128.cu": r"shapes where K > \d+",
    "relu_flat_no_tail.cu": r"(Y and dX|X and dY) .*N is a multiple of (32|128); M is not",
    "relu_lazy_forward.cu": r"relu_forward wrote nothing",
    "relu_backward_ignores_mask.cu": r"relu_backward .*mask it is given",
    "relu_bit_order.cu": r"bit order is reversed",
    "relu_mask_ge.cu": r"Every mask bit is set|x > 0",
    "relu_no_word_guard.cu": r"word < W",
    "gemm_relu_no_bias.cu": r"without the bias",
    "mlp_relu_backward_sign.cu": r"gemm_relu is right, relu_backward is not.*mask it is given",
    "mlp_relu_backward_stash.cu": r"gemm_relu is right, relu_backward is not.*mask it is given",
    "mlp_gemm_square_only.cu": r"never written|non-square",
    "tile_load_k_guard_only.cu": r"tile load needs row < M and col < N",
    "bias_read_before_column_test.cu": r"bias\[col\] only for col < N",
}
HINTS |= {
    "gemm_skips_tiny_a.cu": r"not unit-scale randn \(A x 2\^-24, B x 2\^24\)",
    "relu_arithmetic_max.cu": r"near \+-FLT_MAX(.|\n)*x > 0\.0f \? x : 0\.0f",
    "uninitialised_accumulator.cu": r"about -1\.69e\+38(.|\n)*Initialise the accumulator",
    "shared_same_element_store.cu": r"Two threads store the same shared element at one line(.|\n)*a barrier cannot",
    "relu_mask_or_race.cu": r"__ballot_sync(.|\n)*atomicOr",
    "rows_on_grid_y.cu": r"gridDim.y and gridDim.z are at most 65535",
    "block_per_row.cu": r"at most 1024 threads(.|\n)*gridDim.x = ceil\(N / blockDim.x\)",
}

# kernels/ file -> exercise (05_* are GEMMs with the `gemm` launcher)
KERNEL_EXERCISE = {
    "01_naive.cu": "naive",
    "01a_naive_uncoalesced.cu": "naive",
    "02_tiled.cu": "tiled",
    "03_bank_conflicts.cu": "conflict_free",
    "03_conflict_free.cu": "conflict_free",
    "04a_register_1d.cu": "register_blocked",
    "04_register_blocked.cu": "register_blocked",
    "06_relu_mask.cu": "relu_mask",
    "07_gemm_relu.cu": "gemm_relu",
    "08_mlp_step.cu": "mlp_step",
}
# kernels/ files that are exercises' kernels (00_machine.cu holds notebook 00's probes, no launcher of the contract)
KERNEL_FILES = sorted(
    p.name for p in KERNELS.glob("*.cu") if re.search(r'extern "C" void (gemm|relu_forward|gemm_relu)\(', p.read_text())
)
# correct, but on the CPU backend they miss their exercise's access bound (grader/spec/exercises.py ACCESS_BOUNDS),
# as on a GPU they miss its threshold: uncoalesced, 32-way bank conflicts, 1-D blocking (1.1 shared loads per FMA)
CPU_ACCESS_MISS = {
    "01a_naive_uncoalesced.cu": "sectors_over_ideal_ld",
    "03_bank_conflicts.cu": "bank_conflicts_per_shared_request",
    "04a_register_1d.cu": "shared_loads_per_fma",
}


def _kernel_exercise(name: str) -> str:
    return KERNEL_EXERCISE.get(name, "register_blocked")


def _grade(job):
    from grader.judge import grade
    from grader.run import sandbox

    exercise, path, timeout = job
    # On a GPU the two verdicts at a time share it as batch --per-gpu 2 does: each worker holds a lock
    # from its first GPU operation on, so one's timed runs never overlap the other's work.
    lock = {"gpu_lock": str(GPU_LOCK), "lock_wait": sandbox.RUN_TIMEOUT_S + 30.0} if BACKEND == "cuda" else {}
    return grade.grade(exercise, path, backend=BACKEND, timeout=timeout, seed=1234, **lock)


GPU_LOCK = Path(tempfile.gettempdir()) / f"grader-test-gpu-{os.getpid()}.lock"


@pytest.fixture(scope="module")
def verdicts():
    jobs = {
        f"sub/{name}": (SUB_EXERCISE.get(name, "naive"), SUBS / name, HANG_TIMEOUT_S if name == "hang.cu" else None)
        for name in CPU_EXPECT
    }
    jobs |= {f"ref/{name}": (_kernel_exercise(name), KERNELS / name, None) for name in KERNEL_FILES}
    # SUITE_ONLY="sub/memcpy2d*,ref/07_*": grade only these (a re-run of what failed, e.g. on a GPU);
    # the tests of the others skip
    only = [p for p in os.environ.get("SUITE_ONLY", "").split(",") if p]
    if only:
        jobs = {k: v for k, v in jobs.items() if any(fnmatch.fnmatch(k, p) for p in only)}
    # the hang first: it waits for its time-out while the others run
    order = sorted(jobs, key=lambda k: k != "sub/hang.cu")
    # SUITE_JOBS=4: more verdicts at a time (their builds and CPU profiles overlap; a GPU's timed runs
    # still take turns through the lock)
    with ThreadPoolExecutor(max_workers=int(os.environ.get("SUITE_JOBS", "2"))) as pool:
        futures = {pool.submit(_grade, jobs[k]): k for k in order}
        return _Verdicts(_logged(futures, os.environ.get("SUITE_PROGRESS")))


def _logged(futures, log_path):
    """(key, verdict) as each finishes; SUITE_PROGRESS=FILE also appends one line per verdict there, so a run
    cut off by a time-out (a GPU call's limit) still shows which verdicts it reached and how long each took."""
    t0 = time.monotonic()
    for future in as_completed(futures):
        r = future.result()
        if log_path:
            with open(log_path, "a") as log:
                first = (r.message or "").splitlines()[:1]
                print(
                    f"{time.monotonic() - t0:7.1f} s {futures[future]}: compiled={r.compiled} correct={r.correct}"
                    f" passed={r.passed} {first[0][:100] if first else ''}",
                    file=log,
                )
        yield futures[future], r


class _Verdicts(dict):
    def __missing__(self, key):
        pytest.skip(f"{key} is not in SUITE_ONLY")


def test_every_submission_has_an_expected_verdict_and_a_header():
    on_disk = {p.name for p in SUBS.glob("*.cu")}
    assert on_disk == set(CPU_EXPECT)
    for name in on_disk - {"empty.cu", "binary.cu"}:
        first = (SUBS / name).read_text().splitlines()[0]
        assert first.startswith("// Known "), f"{name}: the header comment must say what is wrong"


def flags_as_expected(name: str, got: tuple[bool, bool, bool], backend: str = BACKEND) -> bool:
    """A submission's (compiled, correct, passed) against what it must give on `backend`. On a GPU: a file whose
    behaviour is undefined there must compile; one that may fail any way must not pass; a good one must be correct
    (its speed is graded against this GPU's threshold). test_verdict checks this first; judge_progress too."""
    compiled, correct, passed, _ = CPU_EXPECT[name]
    if backend == "cuda" and name in GPU_UNDEFINED:
        return got[0]
    if backend == "cuda" and name in GPU_ANY_FAILURE:
        return not got[2]
    if backend == "cuda" and passed:
        return got[1]
    return got == (compiled, correct, passed)


def judge_progress(lines, backend: str = "cuda") -> tuple[list[str], list[str], list[str]]:
    """(judged, wrong, missing) keys of a SUITE_PROGRESS log: the verdicts a run cut off by a time-out reached,
    judged by flags_as_expected (a reference kernel: compiled and correct). The message patterns are not in the
    log. `python tests/test_grade.py --judge LOG...` prints it (logs of several runs: the last line of a key wins)."""
    seen = {}
    for line in lines:
        m = re.match(r"\s*[\d.]+ s (\S+): compiled=(\w+) correct=(\w+) passed=(\w+)", line)
        if m:
            seen[m.group(1)] = tuple(x == "True" for x in m.group(2, 3, 4))
    keys = [f"sub/{n}" for n in CPU_EXPECT] + [f"ref/{n}" for n in KERNEL_FILES]
    wrong = [
        k
        for k in keys
        if k in seen and not (flags_as_expected(k[4:], seen[k], backend) if k.startswith("sub/") else all(seen[k][:2]))
    ]
    return [k for k in keys if k in seen], wrong, [k for k in keys if k not in seen]


def test_a_progress_log_is_judged_by_the_gpu_rules():
    good = next(n for n, e in CPU_EXPECT.items() if e[2] and n not in GPU_UNDEFINED | set(GPU_ANY_FAILURE))
    bad = next(n for n, e in CPU_EXPECT.items() if not e[2] and n not in GPU_UNDEFINED | set(GPU_ANY_FAILURE))
    log = [
        f"   1.0 s sub/{good}: compiled=True correct=True passed=False correct; too slow: 1.2x",  # speed: this GPU's
        f"   2.0 s sub/{bad}: compiled=True correct=True passed=True correct; passed: 9x",  # a bad file that passed
        "   3.0 s ref/01_naive.cu: compiled=True correct=False passed=False wrong",
        "a line that is not a verdict",
    ]
    judged, wrong, missing = judge_progress(log)
    assert set(judged) == {f"sub/{good}", f"sub/{bad}", "ref/01_naive.cu"}
    assert set(wrong) == {f"sub/{bad}", "ref/01_naive.cu"}
    assert len(missing) == len(CPU_EXPECT) + len(KERNEL_FILES) - 3 and f"sub/{good}" not in missing
    _, wrong_on_cpu, _ = judge_progress(log[:1], backend="cpu")
    assert wrong_on_cpu == [f"sub/{good}"]  # on the CPU backend a good file must pass


@pytest.mark.parametrize("name", sorted(CPU_EXPECT))
def test_verdict(verdicts, name):
    r = verdicts[f"sub/{name}"]
    compiled, correct, passed, pattern = CPU_EXPECT[name]
    got = (r.compiled, r.correct, r.passed)
    assert flags_as_expected(name, got), f"{name}: {got}\n{r.message}"
    if BACKEND == "cuda" and (name in GPU_UNDEFINED or name in GPU_ANY_FAILURE or passed):
        return  # the GPU rules above are all that holds there
    if BACKEND == "cpu" or name not in GPU_ANY_FAILURE:
        assert re.search(pattern, r.message), f"{name}: {r.message!r} does not match {pattern!r}"
    if name in HINTS:
        assert re.search(HINTS[name], r.hint), f"{name}: hint {r.hint!r}"
    assert r.exit_code == (0 if passed else 1)


@pytest.mark.parametrize("name", KERNEL_FILES)
def test_reference_kernels(verdicts, name):
    from grader.spec import exercises

    r = verdicts[f"ref/{name}"]
    assert r.compiled and r.correct, f"{name}: {r.message}"
    ex = exercises.get(_kernel_exercise(name))
    if BACKEND == "cpu" and name in CPU_ACCESS_MISS:  # the "before" kernels: their access counts show it
        assert not r.passed and CPU_ACCESS_MISS[name] in r.message, f"{name}: {r.message}"
    elif BACKEND == "cpu" or ex.reference == name:
        assert r.passed, f"{name}: {r.message}"  # the exercise's reference reaches its own threshold


def test_failure_message_names_shape_count_and_indices(verdicts):
    r = verdicts["sub/transposed_operand.cu"]
    assert re.search(r"C: \d+ of \d+ elements wrong at shape \d+x\d+x\d+", r.message)
    assert re.search(r"C\[\d+, \d+\]: got -?[\d.e+-]+, expected -?[\d.e+-]+", r.message)
    bad = [s for s in r.shapes if not s.correct]
    assert bad and all(len(s.shape) == 3 for s in bad)


def test_result_is_json_serialisable_with_the_cli_fields(verdicts):
    d = json.loads(json.dumps(verdicts["sub/good_naive.cu"].as_dict()))
    for k in ("exercise", "backend", "compiled", "correct", "passed", "speedup", "threshold", "message"):
        assert k in d


# ---------------------------------------------------------------------------- no child needed
def test_forbidden_scan_ignores_comments_and_catches_tricks():
    from grader.compile import forbidden

    ok = "// cublasSgemm would be faster\n/* #include <torch/torch.h> */\n#include <cstdint>\nint c10 = 0;\n"
    assert forbidden.scan(ok) == []
    for bad in (
        "%:include <cublas_v2.h>\n",
        "#include <cub\\\nlas_v2.h>\n",
        "#define X cu##blas\n",
        "#include MY_HEADER\n",
        "#include <thrust/sort.h>\n",
        'void f(){ popen("ls", "r"); }\n',
        "__attribute__((constructor)) void f(){}\n",
        "cudaStream_t s; cudaStreamCreate(&s);\n",
        'void f(){ asm volatile("syscall"); }\n',
        '#include "my_gemm.h"\n',
        'FILE* f = fdopen(3, "w");\n',  # forge the result pipe (close(fd) is refused in the built object)
        "pthread_create(&t, 0, work, 0);\n",
        "auto t = std::thread(work);\n",
    ):  # work after the launcher returns
        assert forbidden.scan(bad), bad
    for name in KERNEL_FILES:
        assert forbidden.scan((KERNELS / name).read_text()) == [], name


def _timing(kernel_ms, host_ms=None, lib_ms=None, lib="cublas", base_ms=None):
    t = {"kernel": {"median_ms": kernel_ms, "host_ms": host_ms if host_ms is not None else kernel_ms + 0.02}}
    if lib_ms:
        t[lib] = {"median_ms": lib_ms, "host_ms": lib_ms}
    if base_ms:
        t["baseline"] = {"median_ms": base_ms, "host_ms": base_ms}
    return t


def test_plausibility_cap_and_host_clock_cross_check():
    from grader.spec import exercises
    from grader.judge import grade

    ex = exercises.get("tiled")
    assert grade.plausibility(_timing(10.0, lib_ms=5.0), ex) == ""
    assert "host clock" in grade.plausibility(_timing(1.0, host_ms=9.0, lib_ms=5.0), ex)
    assert "faster than cuBLAS" in grade.plausibility(_timing(0.4, lib_ms=5.0), ex)
    assert "faster than torch" in grade.plausibility(_timing(0.01, lib_ms=1.0, lib="torch"), exercises.get("relu_mask"))
    # 2 * 4096^3 flop in 0.5 ms = 275 TFLOP/s: above any float32 peak
    assert "peak" in grade.plausibility(_timing(0.5), ex, {"peak_fp32_tflops": 84.0})


def test_thresholds_override_file_and_env(tmp_path, monkeypatch):
    from grader.spec import exercises
    from grader.errors import CannotGrade

    f = tmp_path / "t.json"
    f.write_text('{"tiled": 1.05}')
    assert exercises.get("tiled", f).threshold == 1.05
    monkeypatch.setenv("GRADER_THRESHOLDS", str(f))
    assert exercises.get("tiled").threshold == 1.05
    f.write_text('{"tilde": 1.0}')
    with pytest.raises(CannotGrade):
        exercises.get("tiled", f)


CORRECTNESS_ONLY = {"mlp_step"}  # not timed: notebook 08 measures the training step


def test_every_exercise_is_timed_against_a_baseline_with_a_threshold():
    from grader.spec import exercises

    for ex in exercises.EXERCISES.values():
        if ex.name in CORRECTNESS_ONLY:
            assert ex.threshold is None and ex.baseline is None and ex.reference_path.is_file(), ex.name
            continue
        shipped = (  # PROVISIONAL: not graded on the H200 yet (exercises.PROVISIONAL_SPEEDUP_H200)
            exercises.SHIPPED_SPEEDUP_H200.get(ex.name)
            or exercises.SHIPPED_SPEEDUP_CPU.get(ex.name)
            or exercises.PROVISIONAL_SPEEDUP_H200[ex.name]
        )
        assert ex.reference in shipped, ex.name  # calibrated on the reference kernel and the notebook
        # below every shipped solution (they pass), but not so far below that it means nothing
        assert ex.baseline and 0.5 * min(shipped.values()) <= ex.threshold < min(shipped.values()), ex.name
        assert ex.baseline in ("torch", "cublas") or ex.baseline_path.exists(), ex.name
        shapes = ex.shapes
        assert min(map(min, shapes)) == 1 and any(len(set(s)) == len(s) for s in shapes)
        assert any(all(d % 8 for d in s) for s in shapes)  # a shape no tile size divides


def test_notebook_html_verdict(verdicts):
    from grader.judge import report

    bad = report.html_report(verdicts["sub/unwritten_tail.cu"])
    assert "FAILED" in bad and "<table" in bad and "hint:" in bad and "never written" in bad
    good = report.html_report(verdicts["sub/good_naive.cu"])
    assert "PASSED" in good
    if BACKEND == "cpu":
        assert "CPU backend: no timing; the verdict rests on access counts" in good
    r = verdicts["sub/good_naive.cu"]
    assert repr(r).startswith("<grader.Result naive")


def test_speed_verdict_and_its_hint():
    """A correct kernel below the threshold fails as too slow with its exercise's hint; one above
    it passes; hidden work (host clock far above the events) is never a pass."""
    from grader.spec import exercises
    from grader.judge import grade
    from grader.run import sandbox

    ex = exercises.get("relu_mask")

    def verdict(kernel_ms, host_ms=None):
        t = {
            "kernel": {"median_ms": kernel_ms, "host_ms": host_ms or kernel_ms},
            "baseline": {"median_ms": 1.0},
            "torch": {"median_ms": 1.0},
        }
        res = grade.Result("relu_mask", "cuda", compiled=True, correct=True, threshold=ex.threshold)
        grade._verdict_speed(res, ex, sandbox.ChildRun(messages=[({"timing": t}, {})]))
        return res

    slow = verdict(1.0 / (0.9 * ex.threshold))
    assert not slow.passed and "too slow" in slow.message and slow.hint == ex.slow_hint and slow.hint
    fast = verdict(1.0 / (1.1 * ex.threshold))
    assert fast.passed and not fast.hint and abs(fast.speedup - 1.1 * ex.threshold) < 1e-9
    hidden = verdict(1.0 / (1.1 * ex.threshold), host_ms=50.0)
    assert not hidden.passed and "implausible" in hidden.message

    def run_with(messages, returncode=0):
        res = grade.Result("relu_mask", "cuda", compiled=True, correct=True, threshold=ex.threshold)
        grade._verdict_speed(res, ex, sandbox.ChildRun(messages=messages, returncode=returncode))
        return res

    t = {"kernel": {"median_ms": 0.1, "host_ms": 0.1}, "baseline": {"median_ms": 1.0}, "torch": {"median_ms": 1.0}}
    crashed = run_with([({"timing": t}, {})], returncode=-11)  # a fast time, then a segfault
    assert not crashed.passed and not crashed.correct and "SIGSEGV" in crashed.message
    twice = run_with([({"timing": t}, {}), ({"timing": t}, {})])  # a second timing: one was forged
    assert not twice.passed and not twice.correct
    failed = run_with([({"timing_error": "CUDA error in gemm: an illegal memory access"}, {})])
    assert not failed.passed and not failed.correct and "8192x8192" in failed.message


def test_gemm_relu_speed_verdict_is_the_fusion_against_its_own_gemm():
    """gemm_relu passes only when the fused kernel beats the file's own `gemm` + a separate pass by the
    threshold; a `gemm` slower than the fused kernel (sandbagged to inflate the baseline) never passes;
    a file without `gemm` is correct but not timed, with the launcher to add."""
    from grader.spec import exercises
    from grader.judge import grade
    from grader.run import sandbox

    ex = exercises.get("gemm_relu")
    assert ex.threshold > 1.0 and ex.baseline_epilogue == "own_gemm_then_pass"

    def verdict(fused_ms, gemm_ms, pass_ms=0.05, dense_ms=None):
        t = {
            "kernel": {"median_ms": fused_ms, "host_ms": fused_ms},
            "gemm_alone": {"median_ms": gemm_ms},
            "fused_dense": {"median_ms": dense_ms or fused_ms},
            "baseline": {"median_ms": gemm_ms + pass_ms},
            "cublas": {"median_ms": fused_ms},
        }
        res = grade.Result("gemm_relu", "cuda", compiled=True, correct=True, threshold=ex.threshold)
        grade._verdict_speed(res, ex, sandbox.ChildRun(messages=[({"timing": t}, {})]))
        return res

    won = verdict(0.36, 0.35)  # (0.35 + 0.05) / 0.36 = 1.11
    assert won.passed and "your gemm + a separate" in won.message and "1.029x your GEMM alone" in won.message
    lost = verdict(0.41, 0.35)  # the epilogue costs more than the separate pass: fusion lost
    assert not lost.passed and "too slow" in lost.message and lost.hint == ex.slow_hint
    sandbagged = verdict(0.36, 0.60)  # a slow `gemm` would make any fused kernel look like a win
    assert not sandbagged.passed and "slower than your fused" in sandbagged.message
    # storing ReLU's zeros is faster (H200): the GEMM alone is held to the fused kernel with positive outputs
    zeros_faster = verdict(0.33, 0.35, dense_ms=0.355)
    assert zeros_faster.passed, zeros_faster.message
    assert not verdict(0.33, 0.45, dense_ms=0.355).passed  # still caught, whatever the zeros
    missing = grade.Result("gemm_relu", "cuda", compiled=True, correct=True, threshold=ex.threshold)
    grade._verdict_speed(missing, ex, sandbox.ChildRun(messages=[({"timing_unavailable": "define gemm"}, {})]))
    assert missing.correct and not missing.passed and "not timed: define gemm" in missing.message


def test_a_message_not_from_the_worker_is_tampering(monkeypatch, tmp_path):
    """Whatever reaches the result channel without the run's secret token (a kernel that found the
    pipe and wrote a made-up result) fails the submission instead of being read."""
    from grader.judge import grade
    from grader.run import sandbox

    forger = tmp_path / "forger.py"  # stands in for a worker whose kernel writes to the pipe
    forger.write_text(
        "import sys\nfrom grader import protocol\nprotocol.send(int(sys.argv[-1]), {'timing': {}, 'device': {}})\n"
    )
    wrapper = tmp_path / "python"
    # only the worker (or the template it is forked from) is the forger: the build's own bounded children
    # (the CPU rewrite) run the real interpreter, so a cold cache does not fail the build first
    wrapper.write_text(
        f'#!/bin/sh\ncase "$*" in *grader.run.worker*|*grader.run.forkserver*) exec {sys.executable} {forger} "$@";; esac\n'
        f'exec {sys.executable} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setattr(sandbox.sys, "executable", str(wrapper))
    r = grade.grade("naive", SUBS / "good_naive.cu", backend=BACKEND, time_it=False)
    assert not r.passed and not r.correct and "tampered" in r.message


def test_html_speed_bar_against_the_threshold():
    from grader.judge import report
    from grader.judge.grade import Result

    r = Result("tiled", "cuda", True, True, False, speedup=1.1, threshold=1.29, message="correct; too slow")
    h = report.html_report(r)
    assert "1.10x (needs 1.29x)" in h and "#c62828" in h


def test_a_failed_verdict_gives_the_seed_that_reproduces_its_shapes():
    """`check --seed S` draws the same inputs and shapes (grader.spec.shapes): the message says how."""
    r = _grade(("naive", SUBS / "row_cache_128.cu", None))
    assert r.seed == 1234 and not r.passed
    assert f"`python -m grader check naive {SUBS / 'row_cache_128.cu'} --seed 1234`" in r.message
    again = _grade(("naive", SUBS / "row_cache_128.cu", None))
    assert [s.shape for s in again.shapes] == [s.shape for s in r.shapes] and again.message == r.message


if __name__ == "__main__":  # python tests/test_grade.py --judge LOG...: a cut-off GPU run's verdicts, judged
    if sys.argv[1:2] != ["--judge"] or len(sys.argv) < 3:
        sys.exit("usage: python tests/test_grade.py --judge SUITE_PROGRESS_LOG...")
    judged, wrong, missing = judge_progress([line for f in sys.argv[2:] for line in open(f)])
    print(f"{len(judged)} of {len(judged) + len(missing)} verdicts judged, {len(wrong)} wrong: {' '.join(wrong)}")
    print("not reached (SUITE_ONLY for a re-run):", ",".join(missing))
    sys.exit(1 if wrong else 0)
