"""The one atomic write (``autograder.runtime.atomic``): never through a link planted where it writes."""

import os

from autograder.runtime import atomic


def test_a_link_planted_at_the_temporary_name_is_not_followed(tmp_path):
    victim = tmp_path / "course.toml"
    victim.write_text("the instructor's\n")
    target = tmp_path / "results.json"
    (tmp_path / f"results.json.{os.getpid()}.tmp").symlink_to(victim)
    atomic.write_text(target, '{"score": 2.0}\n')
    assert victim.read_text() == "the instructor's\n"
    assert target.read_text() == '{"score": 2.0}\n' and not target.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["course.toml", "results.json"]


def test_a_link_at_the_target_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "course.toml"
    victim.write_text("the instructor's\n")
    target = tmp_path / "results.json"
    target.symlink_to(victim)
    atomic.write_text(target, "new\n")
    assert victim.read_text() == "the instructor's\n" and target.read_text() == "new\n" and not target.is_symlink()
