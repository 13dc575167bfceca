"""Building a kernel file: nvcc and g++ (cached by content), the CPU backend, the source scan
before anything compiles and the check of what the built object calls."""

import importlib


def __getattr__(name: str):  # grader.spec.exercises after `import grader` alone: the module, on first use
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
