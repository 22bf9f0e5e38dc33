"""``autograder nbgrader``: the nbgrader course built from the same sources (builder), the environment it
ships (environment: course files, the kit's wheel, requirements, setup.sh, its kernel), the pre-flight autograde
runs before the first submission (preflight), and the runtime a notebook's check cells call."""
