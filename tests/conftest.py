# pytester's in-process runs drop the modules first imported during a run;
# native libraries (jaxlib, torch) must not be imported twice, and the reference
# cache must outlive the inner runs, so these imports happen here, once, before any
# inner run: the one list, autograder.core.preload.IN_PROCESS.
from autograder.core import preload

preload.import_all(preload.IN_PROCESS)

pytest_plugins = ["pytester"]
