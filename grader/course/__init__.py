"""The notebooks' helpers: lab, widgets, plots, the MLP training measurements, notebook 00's
probes, the fusion sweep, the bench, SASS, the set-up doctor, notebooks/ from solutions/."""

from .. import lazy

__getattr__ = lazy.submodules(__name__)
