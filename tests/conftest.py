import os

# The kit's own runs stay hermetic: no student compilation cache unless a test asks for one.
os.environ.setdefault("JAX_COURSE_CACHE_DIR", "")

# The course's 8 CPU devices are set by the plugin (pytest_load_initial_conftests) before this file
# imports JAX; tests/test_devices.py proves it.
# pytester's in-process runs drop the modules first imported during a run;
# native libraries (jaxlib, torch) must not be imported twice, so the heavy
# imports happen here, once, before any inner run.
import flax.linen  # noqa: F401
import hypothesis.extra.numpy  # noqa: F401
import jax  # noqa: F401
import jax.numpy  # noqa: F401
import optax  # noqa: F401
import orbax.checkpoint  # noqa: F401
import torch  # noqa: F401
import torch.utils.data  # noqa: F401

import autograder.pytest_plugin.hooks  # noqa: F401
import autograder.core.oracle  # noqa: F401  (keeps the references it loaded warm across inner runs)
import autograder.checks.values  # noqa: F401
import autograder.checks.purity  # noqa: F401
import autograder.checks.structure  # noqa: F401
import autograder.checks.tracing  # noqa: F401
import autograder.checks.keys  # noqa: F401
import autograder.checks.strategies  # noqa: F401
import autograder.checks.loaders  # noqa: F401

pytest_plugins = ["pytester"]
