"""Running a submission: the native runner its library loads in, the sandboxed worker that drives
it, the parent <-> child protocol, timing."""

from .. import lazy

__getattr__ = lazy.submodules(__name__)
