"""Student text made inert in the files ``grade`` writes (folder names and messages are a student's).

- CSV: a cell a spreadsheet would read as a formula (OWASP's CSV-injection rule: it starts with
  ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading ``'``, which spreadsheets
  show as text. Only text cells go through :func:`csv_text`; the grader's own numbers (a negative
  penalty, say) are written as they are.
- Markdown: :func:`md_text` escapes every character Markdown or the HTML it may contain would
  read as markup (``<``, ``[``, ``*``, backticks, ``|``, ...), and puts a message on one line.
- HTML: :func:`html.escape` (quotes too) wherever student text is written.
"""

from __future__ import annotations

import html
import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: object) -> str:
    """``value`` as a CSV text cell no spreadsheet runs: a leading ``'`` when it starts like a formula."""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~&])")


def md_text(value: object) -> str:
    """``value`` as literal Markdown text on one line: no link, image, HTML tag, emphasis or table cell
    break survives (each special character is backslash-escaped; ``<``/``>``/``&`` as entities)."""
    text = str(value).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("\\<", "&lt;").replace("\\>", "&gt;").replace("\\&", "&amp;")


def html_text(value: object) -> str:
    return html.escape(str(value), quote=True)
