"""The pytest plugin behind ``pytest exercises/``: hooks, the grading session, the report."""
