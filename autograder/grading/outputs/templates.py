"""The HTML pages ``grade`` writes (``report.html``, ``feedback.html``) from Jinja2 templates with auto-escaping.

The templates are package data (``templates/*.html.j2`` beside this module, listed in ``pyproject.toml``'s
``[tool.setuptools.package-data]``; the kit's own wheel takes every file of the package). Every value a template
writes is escaped by :func:`autograder.grading.outputs.inert.html_text` (quotes too) unless it is
:class:`~markupsafe.Markup` the grader made itself (an SVG plot, the report's script, a macro's output): a
student's folder name or message is text, whatever it holds. The environment is made on first use (importing
this module imports no Jinja2) and kept (registered in :mod:`autograder.runtime.stores`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from autograder.grading.outputs.inert import html_text
from autograder.runtime import stores

FOLDER = Path(__file__).with_name("templates")


def _escaped(value: Any) -> Any:
    """What a template writes for ``value``: the grader's own markup as it is, anything else escaped."""
    from markupsafe import Markup

    return value if hasattr(value, "__html__") else Markup(html_text(value))


@functools.cache
def environment() -> Any:
    """The pages' Jinja2 environment: auto-escaping on (every ``{{ value }}`` through :func:`_escaped`), nothing
    undefined tolerated, the templates' own whitespace kept as written."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(FOLDER),
        autoescape=True,
        finalize=_escaped,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


stores.register("grading.outputs.templates.environment", environment, clear=environment.cache_clear)


def render(name: str, **context: Any) -> str:
    """The page of template ``name`` for ``context``."""
    return environment().get_template(name).render(**context)


def markup(text: str) -> Any:
    """``text`` the grader wrote itself (an SVG plot, a script), written as it is."""
    from markupsafe import Markup

    return Markup(text)
