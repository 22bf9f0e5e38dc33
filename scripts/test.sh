#!/usr/bin/env bash
# The kit's own tests (course.toml valid, stubs not started, solutions pass, every check module proven),
# in two pytest-xdist workers when the machine has two cores (a file's tests stay together: tests/conftest.py).
# KIT_TEST_WORKERS=0 runs them in this one process. Assertion rewriting is back on for them
# (pyproject.toml turns it off for the course's own runs).
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${KIT_TEST_WORKERS:-$(( $(nproc) >= 2 ? 2 : 0 ))}
exec .venv/bin/python -m pytest tests/ --assert=rewrite -q -p no:randomly -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
