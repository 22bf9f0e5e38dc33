#!/usr/bin/env bash
# The kit's own tests (course.toml valid, stubs not started, solutions pass, every check module proven),
# in two pytest-xdist workers when the machine has two cores (a file's tests stay together: tests/conftest.py).
# KIT_TEST_WORKERS=0 runs them in this one process. The tiers mirror the tree: tests/unit/<subpackage>/
# (one concern, in process, seconds), tests/galleries/ (each module's checks judged on variants of answers) and
# tests/system/ (the real commands, bundles and platforms). `scripts/test.sh --quick` runs the unit tier and
# the lint and type checks only; with no option, everything (what CI runs). Assertion rewriting is back on for them
# (pyproject.toml turns it off for the course's own runs).
# What the tests need beyond a student's set-up (scripts/setup.sh, run first) is installed here when
# missing: the `test` extra (Playwright, check-jsonschema, ruff), a real terminal (tmux, for `autograder
# watch`) and a real browser (Debian's chromium, for report.html).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v tmux >/dev/null || missing+=(tmux)
[ -x /usr/bin/chromium ] || missing+=(chromium chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
            echo "test.sh: could not install ${missing[*]}; the tests that need them are skipped" >&2
        fi
    else
        echo "test.sh: ${missing[*]} missing and cannot be installed here (no apt-get as root); the tests that need them are skipped" >&2
    fi
fi
.venv/bin/python -c "import playwright, check_jsonschema, cosmic_ray" 2>/dev/null && [ -x .venv/bin/ruff ] && [ -x .venv/bin/mypy ] \
    || .venv/bin/pip install --quiet --disable-pip-version-check -e '.[test]'
# Lint, format and types first (pyproject.toml's [tool.ruff] and [tool.mypy]; .pre-commit-config.yaml runs the
# same on each commit): seconds (mypy keeps its cache in .mypy_cache/), and a failure names the file and line.
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
.venv/bin/mypy
# One pre-flight per setting for the whole run: every test that runs `grade` on the same course, kit and
# limits reuses the first pass (a fresh folder each run; failures are never kept). tests/system/test_preflight.py.
export AUTOGRADER_PREFLIGHT_CACHE=${AUTOGRADER_PREFLIGHT_CACHE:-$(mktemp -d -t autograder-preflight-XXXXXX)}
workers=${KIT_TEST_WORKERS:-$(( $(nproc) >= 2 ? 2 : 0 ))}
tiers=(tests/)
if [ "${1:-}" = "--quick" ]; then
    shift
    tiers=(tests/unit/)
fi
# A test that hangs fails alone, named, after 30 minutes (a file's own pytest.mark.timeout wins): a hang
# once ran CI into its time limit with no name in the output.
exec .venv/bin/python -m pytest "${tiers[@]}" --assert=rewrite -q -p no:randomly --durations=25 --timeout=1800 -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
