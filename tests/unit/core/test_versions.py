"""The library versions the kit supports: declared in pyproject.toml as autograder.core.versions says, and a
newer library than tested runs with one warning line (the oldest are checked by scripts/oldest_versions.sh)."""

import tomllib

from support import ROOT

from autograder.core import versions


def test_pyproject_declares_the_supported_range():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for name in versions.SUPPORTED:
        assert versions.requirement(name) in declared, (name, declared)


def test_the_tested_versions_are_the_ones_installed_here():
    assert versions.installed() == versions.TESTED


def test_a_newer_library_gets_one_warning_line_and_an_older_one_too():
    assert versions.newer_than_tested(dict(versions.TESTED)) is None
    line = versions.newer_than_tested({**versions.TESTED, "jax": "0.11.2", "flax": "0.12.10"})
    assert line.count("\n") == 0 and "jax 0.11.2 (tested up to 0.10.2)" in line and "flax 0.12.10" in line
    assert versions.older_than_supported({"jax": "0.9.2"}).startswith("autograder: warning: jax 0.9.2")
    assert versions.newer_than_tested({"jax": "0.10.2rc1"}) is None
