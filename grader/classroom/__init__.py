"""Many submissions: batch gradebooks, shards and their merge, Gradescope and nbgrader."""

from .. import lazy

__getattr__ = lazy.submodules(__name__)
