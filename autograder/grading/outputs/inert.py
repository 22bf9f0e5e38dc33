"""Student text made inert in the files ``grade`` writes (folder names and messages are a student's).

- CSV: a cell a spreadsheet would read as a formula (OWASP's CSV-injection rule: it starts with
  ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading ``'``, which spreadsheets
  show as text. Only text cells go through :func:`csv_text`; the grader's own numbers (a negative
  penalty, say) are written as they are.
- Markdown: :func:`md_text` puts a message on one line in a code span (nothing inside one is markup, and it
  reads raw as it was written), its ``|`` escaped for the table cell.
- HTML: :func:`html_text` (:func:`html.escape`, quotes too), which the pages' templates apply to every value
  they write (:mod:`autograder.grading.outputs.templates`).
"""

from __future__ import annotations

import html
import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: object) -> str:
    """``value`` as a CSV text cell no spreadsheet runs: a leading ``'`` when it starts like a formula."""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def md_text(value: object) -> str:
    """``value`` as literal Markdown text on one line, readable raw: a code span (no link, image, HTML tag or
    emphasis is interpreted inside one; its fence is longer than any run of backticks in the text), with ``|``
    escaped so that it does not break a table cell."""
    text = str(value).replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html_text(value: object) -> str:
    return html.escape(str(value), quote=True)
