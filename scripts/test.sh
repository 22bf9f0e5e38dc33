#!/usr/bin/env bash
# The kit's own tests (course.toml valid, stubs not started, solutions pass, every check module proven).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest tests/ -q -p no:randomly "$@"
