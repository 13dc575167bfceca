"""The verdict: grade()'s stages, calibration of the speed thresholds, the access profile and
its bounds, the report; reading a submission."""

from .. import lazy

__getattr__ = lazy.submodules(__name__)
