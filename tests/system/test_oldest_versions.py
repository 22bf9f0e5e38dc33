"""The course on the oldest JAX, jaxlib, Flax, Optax and Orbax the kit supports (autograder.core.versions.OLDEST),
in a second environment built from the package registry (scripts/oldest_versions.sh: a venv under /tmp holding
those five releases in front of the kit's own environment): the reference gets full marks, every stub is "not
started". Needs the package registry the first time on a machine (about 90 MB, jaxlib); the venv is kept."""

import os
import subprocess

from support import ROOT


def test_the_course_passes_on_the_oldest_supported_libraries():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # the inner runs are runs of their own
    env.pop("JAX_NUM_CPU_DEVICES", None)
    env.pop("AUTOGRADER_XLA_FLAGS_CHECKED", None)  # another jaxlib: its own answer
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "oldest_versions.sh")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "reference full" in proc.stdout and "stubs not started" in proc.stdout, proc.stdout
    print(proc.stdout)
