"""Only one thing pyproject.toml cannot say: the wheel carries kernels/ as grader/_kernels.

The grader times every exercise against a baseline kernel from kernels/ and reads the
committed H200 results there, so a non-editable install (Colab: pip install of the
repository's archive) needs them inside the package. A checkout (editable install, or
PYTHONPATH) keeps using kernels/ itself: grader.spec.exercises.KERNELS_DIR looks there first.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

KERNEL_FILES = ("*.cu", "*.md", "results/*.json", "results/*.txt")


class BuildPyWithKernels(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads kernels/ in place
        src, dst = Path(__file__).resolve().parent / "kernels", Path(self.build_lib) / "grader" / "_kernels"
        root = Path(__file__).resolve().parent
        files = [(f, f.relative_to(src)) for pattern in KERNEL_FILES for f in src.glob(pattern)]
        # the solution notebooks too: on a GPU without calibration the grader times them (grader.judge.calibration)
        files += [(f, Path("solutions") / f.name) for f in (root / "solutions").glob("*.ipynb")]
        for f, rel in files:
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dst / rel)


setup(cmdclass={"build_py": BuildPyWithKernels})
