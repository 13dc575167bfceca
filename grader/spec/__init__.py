"""The exercises' specification: the kernel-file contract, one spec per exercise and its kind,
the shapes drawn, inputs, float64 references, tolerances and hints."""

from .. import lazy

__getattr__ = lazy.submodules(__name__)
