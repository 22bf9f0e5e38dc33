# pytester's in-process runs drop the modules first imported during a run;
# native libraries (jaxlib, torch) must not be imported twice, so the heavy
# imports happen here, once, before any inner run.
import flax.linen  # noqa: F401
import hypothesis.extra.numpy  # noqa: F401
import jax  # noqa: F401
import jax.numpy  # noqa: F401
import optax  # noqa: F401
import torch  # noqa: F401
import torch.utils.data  # noqa: F401

import autograder.plugin  # noqa: F401
import autograder.purity  # noqa: F401
import autograder.structure  # noqa: F401
import autograder.tracing  # noqa: F401
import autograder.keys  # noqa: F401
import autograder.strategies  # noqa: F401
import autograder.loaders  # noqa: F401

pytest_plugins = ["pytester"]
