"""CPU backend: run CUDA kernel files with g++ and fibers, with race/barrier/bounds checks."""

from .build import compile_library, sanitizer_env, toolchain_id

__all__ = ["compile_library", "toolchain_id", "sanitizer_env"]
