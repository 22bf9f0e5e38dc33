"""``autograder nbgrader``: the nbgrader course built from the same sources, its gradebook, and
the runtime a notebook's check cells call."""
