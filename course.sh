#!/usr/bin/env bash
# The course's two set-up commands (README "Quickstart"):
#   ./course.sh lab    install everything into .venv and open the course in JupyterLab
#   ./course.sh test   install everything into .venv and run the whole test suite
# Works with or without an NVIDIA GPU. Set PYTHON to choose the interpreter and
# TORCH to choose the torch requirement (default: torch==2.13.0).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
TORCH=${TORCH:-torch==2.13.0}

setup() {
    if [ ! -x .venv/bin/python ]; then
        "$PYTHON" -m venv .venv
    fi
    # torch first, on its own: pip then never swaps it for another build
    .venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/pip install -q "$TORCH"
    .venv/bin/pip install -q -e ".[course,dev]"
    .venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
}

case "${1:-}" in
    lab)
        setup
        .venv/bin/python -m grader doctor || true
        exec .venv/bin/jupyter lab notebooks/
        ;;
    test)
        setup
        .venv/bin/python -m grader doctor
        # unit tests, kernel compiles (sm_75/80/90 where nvcc exists), then every
        # solution notebook executed under nbval (outputs that vary are ignored: --nbval-lax)
        .venv/bin/python -m pytest -q -ra tests
        if compgen -G "solutions/*.ipynb" >/dev/null; then
            .venv/bin/python -m pytest -q -ra --nbval-lax solutions/
        fi
        ;;
    *)
        echo "usage: ./course.sh lab | test" >&2
        exit 2
        ;;
esac
