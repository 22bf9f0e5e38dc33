"""The two plots of ``report.html`` as inline SVG, written directly: the score distribution and the pass rates.

No plotting library: importing and running matplotlib for two small charts cost most of a second at the end of
every ``grade`` call (what a one-student regrade waits for). The markup is deterministic (the same class, the
same bytes), holds no script, no link and no id, and every label is escaped text.
"""

from __future__ import annotations

import html
import math

BAR = "#4477aa"
PASS = "#228833"
AXIS = "#333333"
FONT = 'font-family="sans-serif" font-size="11" fill="#222222"'


def _text(x: float, y: float, text: str, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT}{extra}>{html.escape(text)}</text>'


def _number(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def _svg(width: int, height: int, label: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{html.escape(label)}">' + "".join(body) + "</svg>"
    )


def _integer_ticks(top: int, most: int = 6) -> list[int]:
    step = max(1, math.ceil(top / most))
    return list(range(0, top + 1, step))


def histogram(totals: list[float], max_score: float, x_label: str) -> str:
    """How many students scored in each of ``min(20, max_score)`` equal bins of ``[0, max_score]``."""
    span = max_score or 1
    bins = max(1, min(20, int(max_score) or 1))
    counts = [0] * bins
    for total in totals:
        counts[min(bins - 1, max(0, int(bins * total / span)))] += 1
    width, height, left, right, top, bottom = 440, 280, 44, 16, 12, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    highest = max(1, max(counts))
    ticks = _integer_ticks(highest)
    y_top = max(highest, ticks[-1])
    body = [f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="{AXIS}"/>']
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="{AXIS}"/>')
    for k, count in enumerate(counts):
        if count:
            x = left + plot_w * k / bins
            h = plot_h * count / y_top
            body.append(
                f'<rect x="{x + 0.5:.1f}" y="{top + plot_h - h:.1f}" width="{plot_w / bins - 1:.1f}" height="{h:.1f}" '
                f'fill="{BAR}"><title>{count} student(s)</title></rect>'
            )
    for tick in ticks:
        y = top + plot_h - plot_h * tick / y_top
        body.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="{AXIS}"/>')
        body.append(_text(left - 7, y + 4, str(tick), "end"))
    for k in range(bins + 1):
        if bins <= 10 or k % 2 == 0 or k == bins:
            x = left + plot_w * k / bins
            body.append(
                f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 4}" stroke="{AXIS}"/>'
            )
            body.append(_text(x, top + plot_h + 16, _number(round(span * k / bins, 2))))
    body.append(_text(left + plot_w / 2, height - 6, x_label))
    body.append(_text(12, top + plot_h / 2, "students", extra=f' transform="rotate(-90 12 {top + plot_h / 2:.1f})"'))
    return _svg(width, height, "score distribution", body)


def pass_rates(names: list[str], rates: list[float], x_label: str) -> str:
    """One horizontal bar per name (in the given order, from the top): its rate as a percentage."""
    longest = max((len(name) for name in names), default=4)
    left = min(320, 16 + 7 * longest)
    row, top, bottom, right = 22, 8, 40, 24
    width, height = left + 320 + right, top + row * max(1, len(names)) + bottom
    plot_w = width - left - right
    axis_y = top + row * len(names)
    body = [f'<line x1="{left}" y1="{top}" x2="{left}" y2="{axis_y}" stroke="{AXIS}"/>']
    body.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + plot_w}" y2="{axis_y}" stroke="{AXIS}"/>')
    for k, (name, rate) in enumerate(zip(names, rates)):
        y = top + row * k
        share = min(1.0, max(0.0, rate))
        body.append(
            f'<rect x="{left}" y="{y + 4}" width="{plot_w * share:.1f}" height="{row - 8}" fill="{PASS}">'
            f"<title>{html.escape(name)}: {100 * share:.0f} %</title></rect>"
        )
        body.append(_text(left - 6, y + row / 2 + 4, name, "end"))
    for tick in range(0, 101, 20):
        x = left + plot_w * tick / 100
        body.append(f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" stroke="{AXIS}"/>')
        body.append(_text(x, axis_y + 16, str(tick)))
    body.append(_text(left + plot_w / 2, height - 6, x_label))
    return _svg(width, height, "pass rates", body)
