"""Building a kernel file: nvcc and g++ (cached by content), the CPU backend, the source scan
before anything compiles and the check of what the built object calls."""

from .. import lazy

__getattr__ = lazy.submodules(__name__)
