"""The course's JAX backend wherever checks run: JAX's CPU backend with 8 devices, and XLA flags that compile quickly.

Module 11 (``parallel``) spreads a batch over several devices, so every
process that runs checks (``pytest exercises/``, the kit's own tests, the
grading zygote and its children, the trusted verifier, an nbgrader kernel, a
release's recording) asks JAX for :data:`COURSE_CPU_DEVICES` CPU devices, on
JAX's CPU backend whatever accelerator the machine has (``JAX_PLATFORMS=cpu``,
also over a ``JAX_PLATFORMS=cuda`` of the user's): a verdict is the same on a
laptop, a GPU box and a grading server. JAX reads these settings when its
backend starts, at the first operation, and never again: this must run before
anything computes with JAX. Code that runs on one device is not affected (it
runs on device 0).

This module does not import JAX: it sets ``JAX_PLATFORMS`` and
``JAX_NUM_CPU_DEVICES`` (read when JAX is imported later, also by child
processes) and, when JAX is already imported, updates its configuration directly.

Quick compilation: a run of the course compiles about a thousand tiny programs
(every new function, shape or dtype), and XLA's CPU compiler spends most of a
first run optimising code that then runs for microseconds. With LLVM's
optimisation off and XLA's older loop emitters, compiling takes about a third
of the time (``benchmarks/speed.py``); with each program's kernels kept in one
LLVM module (XLA splits them into up to 32, compiled in parallel: for programs
this small every split costs more than it saves), about half of that again
(``benchmarks/compile_flags.py``). The arithmetic is IEEE's either way (no
fast-math; a kernel's last bit may differ from one flag set to another), and
every process whose results are compared (the student's, a grading process, the
trusted verifier, a release's recording) uses the same flags.
They travel in ``XLA_FLAGS``, which XLA reads when its backend starts.

XLA aborts the whole process on a flag it does not know (``F... Unknown flag in
XLA_FLAGS``), and a newer XLA drops flags. So only the flags the installed XLA
accepts are added (:func:`accepted_flags`): one probe per environment (a fresh
interpreter that starts JAX's CPU backend with the flags; XLA names every flag
it does not know), its answer kept per jaxlib version in
``$XDG_CACHE_HOME/autograder/xla-flags.json``, and one warning line naming a
dropped flag. The processes a course process starts inherit the checked flags
(:data:`CHECKED_VAR`) and probe nothing.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

from autograder.runtime import atomic, stores

COURSE_CPU_DEVICES = 8
ENV_VAR = "JAX_NUM_CPU_DEVICES"
PLATFORMS_VAR = "JAX_PLATFORMS"
QUICK_COMPILE_FLAGS = (
    "--xla_backend_optimization_level=0",
    "--xla_cpu_use_fusion_emitters=false",
    "--xla_cpu_parallel_codegen_split_count=1",
)
# Which of the kit's flags the installed jaxlib accepts (JSON: {"jaxlib": version, "flags": {flag: bool}}), set
# once known: processes started with it (grading processes, pytest-xdist workers) probe nothing.
CHECKED_VAR = "AUTOGRADER_XLA_FLAGS_CHECKED"
PROBE_TIMEOUT = 120.0
# JAX's accelerator plugins outside its jax_plugins namespace (what a machine with a GPU or TPU has installed)
_ACCELERATOR_PACKAGES = ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin", "jax_rocm7_plugin", "libtpu")
_UNKNOWN = re.compile(r"Unknown flags? in XLA_FLAGS:\s*(.*)")

_state: dict = {}  # what this process noted: the warnings given, the backend setting set aside, the notes held


def _fresh_state() -> None:
    _state.clear()
    _state.update({"warned": set(), "set_aside": None, "notes": []})


_fresh_state()
stores.register("runtime.devices.state", _state, clear=_fresh_state)


def use_course_backend() -> bool:
    """The course's CPU backend (:func:`use_cpu_backend`), its devices (:func:`use_course_devices`) and quick
    compilation (:func:`with_quick_compile`). False when JAX's backend already started (none then takes effect)."""
    use_cpu_backend()
    os.environ["XLA_FLAGS"] = with_quick_compile(os.environ.get("XLA_FLAGS", ""))
    return use_course_devices()


def use_cpu_backend() -> str | None:
    """Make JAX use its CPU backend (``JAX_PLATFORMS=cpu``, and JAX's configuration when it is imported).

    Returns what was set aside: the accelerator the user asked for (``JAX_PLATFORMS=cuda``) or the one JAX
    would have picked (an installed GPU/TPU plugin), else None; :func:`backend_note` says so in one line."""
    if _state["set_aside"] is None:
        asked = os.environ.get(PLATFORMS_VAR, "").strip()
        if asked and asked.lower() != "cpu":
            _state["set_aside"] = f"{PLATFORMS_VAR}={asked}"
        elif not asked:
            plugins = accelerator_plugins()
            _state["set_aside"] = ", ".join(plugins) if plugins else ""
        else:
            _state["set_aside"] = ""
    os.environ[PLATFORMS_VAR] = "cpu"
    jax = sys.modules.get("jax")
    config = getattr(jax, "config", None)
    if config is not None:
        try:
            config.update("jax_platforms", "cpu")
        except Exception:  # noqa: BLE001 - the backend already started: use_course_devices says so
            pass
    return _state["set_aside"] or None


def accelerator_plugins() -> list[str]:
    """JAX's accelerator plugins installed here (found, not imported: JAX's ``jax_plugins`` namespace and the
    plugin packages of its GPU and TPU releases)."""
    found = []
    try:
        spec = importlib.util.find_spec("jax_plugins")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        found += [f"jax_plugins.{m.name}" for m in pkgutil.iter_modules(list(spec.submodule_search_locations))]
    for name in _ACCELERATOR_PACKAGES:
        try:
            if importlib.util.find_spec(name) is not None:
                found.append(name)
        except (ImportError, ValueError):
            pass
    return sorted(found)


def backend_note() -> str | None:
    """One line for the start of a run when an accelerator was set aside (None otherwise)."""
    set_aside = _state["set_aside"]
    if not set_aside:
        return None
    return (
        f"autograder: the course's checks run on JAX's CPU backend with {COURSE_CPU_DEVICES} devices, the same on "
        f"every machine; the accelerator here ({set_aside}) is set aside"
    )


def with_quick_compile(xla_flags: str) -> str:
    """``xla_flags`` (an ``XLA_FLAGS`` value) with the :data:`QUICK_COMPILE_FLAGS` the installed XLA accepts
    added (:func:`accepted_flags`); a flag it sets already is kept."""
    flags = xla_flags.split()
    named = {flag.split("=", 1)[0] for flag in flags}
    flags += accepted_flags([flag for flag in QUICK_COMPILE_FLAGS if flag.split("=", 1)[0] not in named])
    return " ".join(flags)


def checked_env() -> dict[str, str]:
    """What a process started by this one needs to run on the course's backend without probing XLA again:
    ``JAX_PLATFORMS``, ``JAX_NUM_CPU_DEVICES`` and the flags already checked (a grading process's environment)."""
    accepted_flags(QUICK_COMPILE_FLAGS)
    env = {PLATFORMS_VAR: "cpu", ENV_VAR: str(COURSE_CPU_DEVICES)}
    if CHECKED_VAR in os.environ:
        env[CHECKED_VAR] = os.environ[CHECKED_VAR]
    return env


def accepted_flags(flags: list[str] | tuple[str, ...]) -> list[str]:
    """The flags of ``flags`` the installed XLA accepts; each dropped flag is named once on stderr.

    Known from, in order: this process's environment (:data:`CHECKED_VAR`, set by the process that started it),
    the cache file (one entry per jaxlib version), else a probe (:func:`probe_flags`). When the probe cannot
    tell (JAX does not start at all), ``flags`` as they are: what uses them then fails with XLA's own message."""
    flags = list(flags)
    if not flags:
        return flags
    version = _jaxlib_version()
    known = _inherited(version)
    fresh = [flag for flag in flags if flag not in known]
    if fresh:
        cache = _cache_path()
        stored = _read_cache(cache).get(version, {})
        if any(flag not in stored for flag in fresh):
            probed = probe_flags([flag for flag in fresh if flag not in stored])
            if probed is None:
                return flags
            stored.update(probed)
            _write_cache(cache, version, stored)
        for flag in fresh:
            known[flag] = stored[flag]
            if not stored[flag] and flag not in _state["warned"]:
                _state["warned"].add(flag)
                _warn(
                    f"autograder: warning: this XLA (jaxlib {version}) does not know the flag {flag}; "
                    "the course runs without it (the checks and grades are the same; compiling may be slower)"
                )
        os.environ[CHECKED_VAR] = json.dumps({"jaxlib": version, "flags": known}, sort_keys=True)
    return [flag for flag in flags if known[flag]]


def _inherited(version: str) -> dict[str, bool]:
    """The flags this process's environment says were checked for ``version`` of jaxlib."""
    try:
        data = json.loads(os.environ.get(CHECKED_VAR, ""))
    except ValueError:
        return {}
    if not isinstance(data, dict) or data.get("jaxlib") != version or not isinstance(data.get("flags"), dict):
        return {}
    return {k: v for k, v in data["flags"].items() if isinstance(k, str) and isinstance(v, bool)}


def probe_flags(flags: list[str]) -> dict[str, bool] | None:
    """Start JAX's CPU backend in a fresh interpreter with ``flags`` in ``XLA_FLAGS``: which it accepts.
    XLA names every unknown flag on its fatal line; None when the interpreter failed for another reason."""
    left = list(flags)
    answer: dict[str, bool] = {}
    for _ in range(len(flags) + 1):
        env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", CHECKED_VAR)}
        env.update(XLA_FLAGS=" ".join(left), JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="0")
        try:
            proc = subprocess.run(
                [sys.executable, "-c", "import jax; jax.devices()"],
                env=env,
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode == 0:
            answer.update(dict.fromkeys(left, True))
            return answer
        match = _UNKNOWN.search(proc.stderr)
        if match is None:
            return None
        unknown = {u.split("=", 1)[0] for u in match.group(1).split()}
        gone = [flag for flag in left if flag.split("=", 1)[0] in unknown]
        if not gone:
            return None
        answer.update(dict.fromkeys(gone, False))
        left = [flag for flag in left if flag not in gone]
        if not left:
            return answer
    return None


def hold_warnings() -> None:
    """Keep this module's warnings until :func:`held_warnings` (pytest captures what its earliest hook prints)."""
    _state["hold"] = True


def held_warnings() -> list[str]:
    """The warnings kept since :func:`hold_warnings` (and print the next ones at once again)."""
    _state["hold"] = False
    notes, _state["notes"] = _state["notes"], []
    return notes


def _warn(line: str) -> None:
    if _state.get("hold"):
        _state["notes"].append(line)
    else:
        print(line, file=sys.stderr, flush=True)


def _jaxlib_version() -> str:
    try:
        return importlib.metadata.version("jaxlib")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "autograder" / "xla-flags.json"


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        version: {k: v for k, v in flags.items() if isinstance(k, str) and isinstance(v, bool)}
        for version, flags in data.items()
        if isinstance(version, str) and isinstance(flags, dict)
    }


def _write_cache(path: Path, version: str, known: dict[str, bool]) -> None:
    """Keep the answer for ``version`` (best effort: a read-only home only means probing again next time)."""
    try:
        data = _read_cache(path)
        data[version] = known
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, json.dumps(data, indent=1, sort_keys=True))
    except OSError:
        pass


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


def wrong_device_count_advice(found: int, platform: str | None = None) -> str:
    """What to tell a student whose JAX started with ``found`` devices instead of the course's; ``platform``:
    the backend JAX runs on (asked of JAX when not given)."""
    if platform is None:
        jax = sys.modules.get("jax")
        try:
            platform = jax.default_backend() if jax is not None else "cpu"
        except Exception:  # noqa: BLE001 - the message must not fail
            platform = "cpu"
    if platform != "cpu":
        return (
            f"JAX is running on its {platform} backend with {found} device(s), but the course's checks need JAX's "
            f"CPU backend with {COURSE_CPU_DEVICES} devices. Something started JAX before the course could choose "
            f"its backend: in a notebook, restart the kernel and run the setup cell first; in a script or a shell, "
            f"set {PLATFORMS_VAR}=cpu and {ENV_VAR}={COURSE_CPU_DEVICES} before starting Python."
        )
    return (
        f"JAX is running on its CPU backend with {found} device(s), but the course's checks need {COURSE_CPU_DEVICES} "
        "CPU devices, and JAX fixes the number when it runs its first operation. Something computed with JAX before the "
        "course could set it: in a notebook, restart the kernel and run the setup cell first; in a script or a "
        f"shell, set {ENV_VAR}={COURSE_CPU_DEVICES} (or XLA_FLAGS=--xla_force_host_platform_device_count="
        f"{COURSE_CPU_DEVICES}) before starting Python."
    )
