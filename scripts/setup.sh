#!/usr/bin/env bash
# Create .venv with the pinned dependencies and the kit installed (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# The kit's tests need a real terminal (tmux, for `autograder watch`) and a real browser
# (Debian's chromium, for report.html). Installed when missing and apt is there to do it.
missing=()
command -v tmux >/dev/null || missing+=(tmux)
[ -x /usr/bin/chromium ] || missing+=(chromium chromium-driver)
command -v bwrap >/dev/null || missing+=(bubblewrap)  # grade's sandbox for students' code
if [ ${#missing[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
            echo "setup.sh: could not install ${missing[*]}; the tests that need them are skipped" >&2
        fi
    else
        echo "setup.sh: ${missing[*]} missing and cannot be installed here (no apt-get as root); the tests that need them are skipped" >&2
    fi
fi

[ -x .venv/bin/python ] || "$PY" -m venv .venv
# torch first, pinned: the local CPU build (any other version pulls CUDA).
.venv/bin/pip install --quiet --disable-pip-version-check torch==2.13.0
.venv/bin/pip install --quiet --disable-pip-version-check -e '.[test]'
