"""The pytest entry point (``pytest11``: ``autograder.plugin``); the hooks live in
:mod:`autograder.pytest_plugin.hooks`."""

from autograder.pytest_plugin.hooks import *  # noqa: F401,F403
