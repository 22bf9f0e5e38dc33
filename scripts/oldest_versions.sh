#!/usr/bin/env bash
# The course on the oldest JAX/Flax/Optax/Orbax the kit supports (autograder/core/versions.py: OLDEST), in a
# second environment: a venv under /tmp (kept, keyed by those versions) that holds only these releases of
# jax, jaxlib, flax, optax and orbax-checkpoint (from the package registry), in front of the kit's own .venv
# (every other package comes from there). Checks that the reference gets full marks and that every stub is
# "not started". Run by the kit's tests (tests/system/test_oldest_versions.py, so scripts/test.sh and CI run it);
# alone: `bash scripts/oldest_versions.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base=$(.venv/bin/python -c 'import os, sysconfig; print(os.path.realpath(sysconfig.get_paths()["purelib"]))')
pins=$(PYTHONPATH=$root .venv/bin/python -c 'from autograder.core.versions import oldest_pins; print(" ".join(oldest_pins()))')
# keyed by the pins and by the environment it stands in front of (one built from another checkout's .venv,
# since removed, would find no pytest)
env=${OLDEST_ENV:-/tmp/autograder-oldest-$(echo "$pins $base" | sha256sum | cut -c1-12)}
started=$(date +%s)
if [ ! -e "$env/ready" ]; then
    rm -rf "$env"
    .venv/bin/python -m venv --without-pip "$env"
    site=$("$env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    # shellcheck disable=SC2086
    .venv/bin/pip install --quiet --disable-pip-version-check --no-deps --target "$site" $pins
    # the kit's environment behind these (its .pth files too: addsitedir)
    echo "import site; site.addsitedir('$base')" > "$site/zz-kit-environment.pth"
    touch "$env/ready"
fi
built=$(date +%s)
PYTHONPATH=$root "$env/bin/python" - "$root" <<'PY'
import importlib.metadata as m, json, os, subprocess, sys, tempfile
from autograder.core.versions import OLDEST
root = sys.argv[1]
found = {name: m.version(name) for name in OLDEST}
assert found == OLDEST, f"the oldest-versions environment has {found}, not {OLDEST}"
env = dict(os.environ, PYTHONPATH=root)
with tempfile.TemporaryDirectory() as tmp:
    for flag, want in (("--solutions", "full"), (None, "not started")):
        out = os.path.join(tmp, "results.json")
        cmd = [sys.executable, "-m", "pytest", "exercises/", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
               "--results-json", out] + ([flag] if flag else [])
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
        if not os.path.exists(out):
            sys.exit(f"oldest versions {found}: {' '.join(cmd[2:])} wrote no results (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        data = json.load(open(out))
        functions = data["functions"]
        bad = [f for f in functions if (f["points"] != f["max_points"] if want == "full" else f["status"] != "not started")]
        if bad:
            sys.exit(f"oldest versions {found}: {want} expected with {flag or 'the stubs'}, but: {json.dumps(bad)[:3000]}")
        print(f"oldest versions {found}: {'reference' if flag else 'stubs'} {want} ({len(functions)} functions)", flush=True)
PY
echo "oldest versions: environment $((built - started)) s, checks $(( $(date +%s) - built )) s"
