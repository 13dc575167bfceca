"""A package's submodules as attributes, imported on first use (PEP 562): `grader.spec.exercises` after
`import grader` alone. Each layer's __init__ sets `__getattr__ = lazy.submodules(__name__)`."""

import importlib


def submodules(package: str):
    def __getattr__(name: str):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{package}.{name}":
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
