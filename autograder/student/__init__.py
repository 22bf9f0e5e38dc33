"""The student's loop around ``pytest exercises/``: watch, status, reset, hints and local progress."""
