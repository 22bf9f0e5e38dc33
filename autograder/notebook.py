"""What generated notebooks import (``from autograder.notebook import check``); the runtime lives in
:mod:`autograder.notebooks.runtime`."""

from autograder.notebooks.runtime import *  # noqa: F401,F403
