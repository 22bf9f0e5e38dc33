"""The student's loop around ``pytest exercises/``: watch, status, reset, hint (the local progress and the hints
it paces are :mod:`autograder.core.progress` and :mod:`autograder.core.hints`: the pytest plugin, a layer below, uses them too)."""
