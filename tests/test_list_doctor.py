"""`python -m grader list` and `doctor`: what a newcomer runs first."""

import shutil

from grader import cli
from grader.course import doctor
from grader.spec import exercises
from grader.compile import hostcc


def test_list_names_every_exercise_and_its_launchers(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for exercise, launchers in ((n, e.launchers) for n, e in exercises.EXERCISES.items()):
        line = next(l for l in out.splitlines() if l.startswith(exercise + " "))
        assert all(l.name in line for l in launchers)


def test_doctor_passes_on_this_machine_and_names_the_backend(capsys):
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "backend" in out and "ready." in out
    for name in ("python", "torch", "GPU", "nvcc", "g++", "ninja", "colab"):
        assert f"] {name}" in out


def test_doctor_without_a_compiler_fails_with_the_fix(monkeypatch, capsys):
    real_which = shutil.which
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None if name in ("g++", "c++") else real_which(name))
    monkeypatch.delenv("CXX", raising=False)
    hostcc.probe.cache_clear()
    assert doctor.main() == 1
    hostcc.probe.cache_clear()
    out = capsys.readouterr().out
    assert "[FAIL] g++" in out and "apt install g++" in out
