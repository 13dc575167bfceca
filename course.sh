#!/usr/bin/env bash
# The course's two set-up commands (README "Quickstart"):
#   ./course.sh lab [ARGS...]   install into .venv, check the machine, open JupyterLab (ARGS go to `jupyter lab`,
#                               e.g. --no-browser --port 8890 --ip 0.0.0.0; --allow-root is added when run as root)
#   ./course.sh test            install into .venv and run the whole test suite (what CI runs)
# Works with or without an NVIDIA GPU. Variables:
#   PYTHON       the interpreter that makes .venv (default python3; 3.10 or newer; a .venv made by
#                another interpreter is made again)
#   TORCH        the torch requirement and any pip options, word-split:
#                TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"
#   TORCH_INDEX  only the index to take torch from (default: PyPI with a GPU, PyTorch's CPU index without)
# The install runs again only when pyproject.toml or the torch choice changed (.venv/.course-stamp).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
TORCH_PIN=torch==2.13.0
CPU_INDEX=https://download.pytorch.org/whl/cpu
VENV=$PWD/.venv
FRESH_INSTALL=1

has_gpu() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}

# The pip arguments that install torch, one per line (so TORCH is word-split, never glob-expanded).
torch_args() {
    if [ -n "${TORCH:-}" ]; then
        local -a words
        read -r -a words <<<"$TORCH"
        printf '%s\n' "${words[@]}" ${TORCH_INDEX:+--index-url "$TORCH_INDEX"}
    elif [ -n "${TORCH_INDEX:-}" ]; then
        printf '%s\n' "$TORCH_PIN" --index-url "$TORCH_INDEX"
    elif has_gpu; then
        printf '%s\n' "$TORCH_PIN"                 # PyPI's CUDA build (about 4.5 GB with its nvidia-* wheels)
    elif local_cpu_wheel; then
        printf '%s\n' "$TORCH_PIN"                 # pip's own configuration already yields a CPU wheel
    else
        printf '%s\n' "$TORCH_PIN" --index-url "$CPU_INDEX"   # the CPU build: about 190 MB instead of 4.5 GB
    fi
}

pip_run() {
    if [ -x "$VENV/bin/pip" ]; then "$VENV/bin/pip" "$@"; else "$PYTHON" -m pip "$@"; fi
}

# True when pip, as configured here (find-links, a local mirror), resolves the pin to a CPU
# build without going to any index: then the plain pin is both the right build and offline.
local_cpu_wheel() {
    pip_run install --dry-run --no-index --no-deps --ignore-installed --quiet --report - "$TORCH_PIN" \
        2>/dev/null | grep -q '"version": "[^"]*+cpu"'
}

# "PREFIX X.Y.Z" of an interpreter's base installation (a venv's python names the one that made it)
python_id() {
    "$1" -c 'import sys; print(sys.base_prefix, "%d.%d.%d" % sys.version_info[:3])' 2>/dev/null
}

# PYTHON must be 3.10+ (older ones fail later, in pip's resolver, with no word about the version)
check_python() {
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        echo "course.sh: $PYTHON not found: install Python 3.10 or newer, or set PYTHON=/path/to/python3" >&2
        exit 2
    fi
    local version
    version=$("$PYTHON" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null || true)
    if ! printf '%s\n' "$version" | grep -Eq '^3\.([1-9][0-9])\.'; then
        echo "course.sh: $PYTHON is Python ${version:-of an unknown version}; the course needs 3.10 or newer:" \
            "install one and run PYTHON=python3.12 ./course.sh ..." >&2
        exit 2
    fi
}

setup() {
    check_python
    # a .venv made by another interpreter (an upgrade, another PYTHON) is made again: reusing it mixes the two
    if [ -e "$VENV" ]; then
        local want have
        want=$(python_id "$PYTHON")
        have=$(python_id "$VENV/bin/python" || true)
        if [ "$have" != "$want" ]; then
            echo "rebuilding .venv: it was made by ${have:-a Python that no longer runs}, PYTHON is $want" >&2
            rm -rf "$VENV"
        fi
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        "$PYTHON" -m venv "$VENV"
    fi
    local stamp gpu=no
    if has_gpu; then gpu=yes; fi
    # what the install depends on: the project's requirements and the torch choice (not the pip dry run
    # torch_args may make: that costs seconds, and the answer follows from these)
    stamp="$(cat pyproject.toml; printf 'TORCH=%s\nTORCH_INDEX=%s\nGPU=%s\n' "${TORCH:-}" "${TORCH_INDEX:-}" "$gpu")"
    if [ -f "$VENV/.course-stamp" ] && [ "$(cat "$VENV/.course-stamp")" = "$stamp" ] \
        && "$VENV/bin/python" -c "import importlib.util as u; assert u.find_spec('torch') and u.find_spec('grader')" \
            2>/dev/null; then
        FRESH_INSTALL=0
        return 0  # nothing changed since the last install (no import here: importing torch alone takes seconds)
    fi
    FRESH_INSTALL=1
    # torch first, on its own: pip then never swaps it for another build
    local -a targs
    mapfile -t targs < <(torch_args)
    if ! "$VENV/bin/python" -c "import torch" 2>/dev/null || [ -n "${TORCH:-}${TORCH_INDEX:-}" ]; then
        echo "installing torch: pip install ${targs[*]}" >&2
        "$VENV/bin/pip" install -q "${targs[@]}"
    fi
    "$VENV/bin/pip" install -q -e ".[course,dev]"
    # the kernel finds .venv/bin first (ninja for load_inline, nvcc wrappers), however JupyterLab was started
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 --env PATH "$VENV/bin:\${PATH}" >/dev/null
    printf '%s' "$stamp" >"$VENV/.course-stamp"
}

case "${1:-}" in
    lab)
        shift
        setup
        export PATH="$VENV/bin:$PATH"
        if [ "$FRESH_INSTALL" = 1 ]; then
            python -m grader doctor || true  # builds and runs a reference kernel: worth it after an install
        else
            echo "set-up unchanged since the last install; python -m grader doctor checks this machine" >&2
        fi
        extra=()
        if [ "$(id -u)" = 0 ]; then extra+=(--allow-root); fi  # containers and cloud boxes run as root
        exec jupyter lab notebooks/ "${extra[@]}" "$@"
        ;;
    test)
        setup
        export PATH="$VENV/bin:$PATH"
        python -m grader doctor
        # unit tests, kernel compiles (sm_75/80/90 where nvcc exists), then every
        # solution notebook executed under nbval (outputs that vary are ignored: --nbval-lax).
        # Both stages run whatever the first gives; the exit status is the first failure's.
        status=0
        # TEST_JOBS processes (pytest-xdist, default 2; 1: none), each given whole files, so that a file's
        # fixtures (test_grade.py grades every suite file once) run once
        par=()
        if [ "${TEST_JOBS:-2}" != 1 ] && python -c "import xdist" 2>/dev/null; then
            par=(-n "${TEST_JOBS:-2}" --dist loadfile)
        fi
        # --durations: the slowest tests, so that a maintainer sees where the time goes (keep it under 20 min)
        python -m pytest -q -ra "${par[@]}" --durations=15 tests || status=$?
        if compgen -G "solutions/*.ipynb" >/dev/null; then
            python -m pytest -q -ra "${par[@]}" --nbval-lax solutions/ || { rc=$?; [ "$status" != 0 ] || status=$rc; }
        fi
        [ "$status" = 0 ] || echo "course.sh test: failed (exit $status): see the summaries above" >&2
        exit "$status"
        ;;
    torch-args)  # what setup would pass to pip for torch, one per line (for checking TORCH/TORCH_INDEX)
        torch_args
        ;;
    *)
        echo "usage: ./course.sh lab [jupyter lab options] | test" >&2
        exit 2
        ;;
esac
