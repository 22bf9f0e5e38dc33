"""The course model and the plumbing every side shares: ``course.toml``, failures, loading a
submission, the oracle seam. Imports neither JAX nor pytest."""
