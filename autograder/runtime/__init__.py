"""The process plumbing every checking process shares: how JAX and the interpreter are set up, knowing no course.

The lowest layer of the package: it imports nothing from the rest of ``autograder``
(``tests/unit/test_layers.py``); the course model (:mod:`autograder.core`) and everything
above it may use it. Importing a module here does no work; JAX is imported when a
function that needs it is called (:mod:`~autograder.runtime.copies` excepted, whose only
callers are already running JAX).

- :mod:`~autograder.runtime.devices`       the course's 8 CPU devices and quick-compiling XLA flags, set before JAX starts
- :mod:`~autograder.runtime.lowering`      lowering to MLIR in reused contexts
- :mod:`~autograder.runtime.staging`       NumPy arrays and scalars put on the device without compiling a program
- :mod:`~autograder.runtime.compile_cache` JAX's persistent compilation cache settings (students, grade)
- :mod:`~autograder.runtime.preload`       the libraries every grading process imports first (names only)
- :mod:`~autograder.runtime.imports`       runs of pytest in one process that do not see each other's modules
- :mod:`~autograder.runtime.global_rngs`   the process's global random generators, kept as they were
- :mod:`~autograder.runtime.stores`        every process-wide mutable store of the package, registered, listed and cleared
- :mod:`~autograder.runtime.monitoring`    the one ``jax.monitoring`` listener, registered on first use; consumers subscribe
- :mod:`~autograder.runtime.copies`        fresh copies of argument trees (new buffers for every array leaf)
- :mod:`~autograder.runtime.cpus`          the CPUs a process may keep busy (a container's quota counted), and whether one is spare
"""
