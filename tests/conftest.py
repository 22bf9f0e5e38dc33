import os

# The kit's own runs stay hermetic: no student compilation cache unless a test asks for one.
os.environ.setdefault("JAX_COURSE_CACHE_DIR", "")

# The course's 8 CPU devices are set by the plugin (pytest_load_initial_conftests) before this file
# imports JAX; tests/test_devices.py proves it.
# pytester's in-process runs drop the modules first imported during a run;
# native libraries (jaxlib, torch) must not be imported twice, and the reference
# cache must outlive the inner runs, so these imports happen here, once, before any
# inner run: the one list, autograder.core.preload.IN_PROCESS.
from autograder.core import preload

preload.import_all(preload.IN_PROCESS)

pytest_plugins = ["pytester"]
