#!/usr/bin/env bash
# Gradescope's image set-up (Ubuntu): g++ for the CPU backend, the course with the CPU build of torch.
# Replace the URL by your fork or a release archive; keep it in step with pyproject.toml [project.urls].
set -euo pipefail
apt-get update && apt-get install -y --no-install-recommends g++ python3-venv unzip curl
mkdir -p /autograder/source/course
curl -fsSL https://github.com/gemm-course/fast-gemm/archive/refs/heads/main.zip -o /tmp/course.zip
unzip -q /tmp/course.zip -d /tmp && cp -r /tmp/fast-gemm-main/. /autograder/source/course/
# a venv: Ubuntu 24.04's system pip refuses installs (PEP 668, externally managed)
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install -e /autograder/source/course
# run_autograder calls `python3`: make it the venv's (/usr/local/bin comes before /usr/bin on PATH;
# apt's own scripts name /usr/bin/python3)
ln -sf /autograder/venv/bin/python3 /usr/local/bin/python3
python3 -m grader doctor   # builds and runs a reference kernel: the image works
