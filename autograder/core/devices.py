"""The course's JAX backend wherever checks run: 8 CPU devices, and XLA flags that compile quickly.

Module 11 (``parallel``) spreads a batch over several devices, so every
process that runs checks (``pytest exercises/``, the kit's own tests, the
grading zygote and its children, the trusted verifier, an nbgrader kernel)
asks JAX for :data:`COURSE_CPU_DEVICES` CPU devices. JAX reads the setting
when its backend starts, at the first operation, and never again: this must
run before anything computes with JAX. Code that runs on one device is not
affected (it runs on device 0).

This module does not import JAX: it sets ``JAX_NUM_CPU_DEVICES`` (read when
JAX is imported later, also by child processes) and, when JAX is already
imported, updates ``jax_num_cpu_devices`` directly.

Quick compilation: a run of the course compiles about a thousand tiny programs
(every new function, shape or dtype), and XLA's CPU compiler spends most of a
first run optimising code that then runs for microseconds. With LLVM's
optimisation off and XLA's older loop emitters, compiling takes about a third
of the time (``benchmarks/speed.py``). The arithmetic is IEEE's either way (no
fast-math), and every process whose results are compared (the student's, a
grading process, the trusted verifier, a release's recording) uses the same flags.
They travel in ``XLA_FLAGS``, which XLA reads when its backend starts.
"""

from __future__ import annotations

import os
import sys

COURSE_CPU_DEVICES = 8
ENV_VAR = "JAX_NUM_CPU_DEVICES"
QUICK_COMPILE_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")


def use_course_backend() -> bool:
    """The course's CPU devices (:func:`use_course_devices`) and quick compilation (:func:`with_quick_compile`).
    False when JAX's backend already started (neither then takes effect)."""
    os.environ["XLA_FLAGS"] = with_quick_compile(os.environ.get("XLA_FLAGS", ""))
    return use_course_devices()


def with_quick_compile(xla_flags: str) -> str:
    """``xla_flags`` (an ``XLA_FLAGS`` value) with :data:`QUICK_COMPILE_FLAGS` added; a flag it sets already is kept."""
    flags = xla_flags.split()
    named = {flag.split("=", 1)[0] for flag in flags}
    flags += [flag for flag in QUICK_COMPILE_FLAGS if flag.split("=", 1)[0] not in named]
    return " ".join(flags)


def use_course_devices() -> bool:
    """Ask JAX for the course's CPU devices. False when JAX's backend already started with another count.

    Safe to call any number of times, before or after ``import jax``; it
    only has an effect before JAX's first operation.
    """
    os.environ[ENV_VAR] = str(COURSE_CPU_DEVICES)
    jax = sys.modules.get("jax")
    config = getattr(jax, "config", None)
    if config is None:
        return True  # JAX reads the environment variable when it is imported
    try:
        config.update("jax_num_cpu_devices", COURSE_CPU_DEVICES)
    except RuntimeError:  # "should be updated before backends are initialized"
        return False
    return True


def wrong_device_count_advice(found: int) -> str:
    """What to tell a student whose JAX started with ``found`` devices instead of the course's."""
    return (
        f"JAX is running with {found} device(s), but the course's checks need {COURSE_CPU_DEVICES} CPU devices, "
        "and JAX fixes the number when it runs its first operation. Something computed with JAX before the "
        "course could set it: in a notebook, restart the kernel and run the setup cell first; in a script or a "
        f"shell, set {ENV_VAR}={COURSE_CPU_DEVICES} (or XLA_FLAGS=--xla_force_host_platform_device_count="
        f"{COURSE_CPU_DEVICES}) before starting Python."
    )
