#!/usr/bin/env bash
# Create .venv with what a student needs to solve and check the exercises (idempotent): the pinned
# stack, torch's CPU build, and the kit (which registers the checks' pytest plugin). The kit's own
# tests need more (Playwright, a browser, tmux): scripts/test.sh installs those.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PIP=(--quiet --disable-pip-version-check)

# `autograder grade` runs students' code in bubblewrap. Installed when missing and apt is there to do it.
if ! command -v bwrap >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] \
        && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null; then
        :
    else
        echo "setup.sh: bubblewrap (bwrap) is missing and could not be installed here; solving and checking the exercises does not need it, \`autograder grade\` does" >&2
    fi
fi

[ -x .venv/bin/python ] || "$PY" -m venv .venv
# torch first, pinned, its CPU build (PyTorch's CPU index; the default index's build pulls CUDA). Where that index
# cannot be reached (a mirror-only network), pip would retry it for every package (minutes): it is asked once, in
# 5 s, and left out when it does not answer (pip then takes a local file or pip.conf's index).
TORCH_INDEX=https://download.pytorch.org/whl/cpu
if ! .venv/bin/python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null; then
    if .venv/bin/python -c "import urllib.request as u; u.urlopen('$TORCH_INDEX/torch/', timeout=5)" 2>/dev/null; then
        .venv/bin/pip install "${PIP[@]}" torch==2.13.0 --extra-index-url "$TORCH_INDEX"
    else
        echo "setup.sh: PyTorch's CPU index ($TORCH_INDEX) does not answer; torch 2.13.0 from the configured index" >&2
        .venv/bin/pip install "${PIP[@]}" torch==2.13.0
    fi
fi
.venv/bin/pip install "${PIP[@]}" -e .

# Prove the environment: the checks' plugin is registered and every module's checks are collected.
if ! out=$(.venv/bin/python -m pytest exercises/ --grading --collect-only -q -p no:cacheprovider 2>&1); then
    printf '%s\n' "$out" | tail -20 >&2
    echo "setup.sh: the course's checks cannot run in .venv (above: pytest's own words); the set-up is broken" >&2
    exit 1
fi
