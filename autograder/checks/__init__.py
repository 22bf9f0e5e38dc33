"""What ``exercises/test_*.py`` import: one module per kind of check, and the strategies that
generate their inputs."""
