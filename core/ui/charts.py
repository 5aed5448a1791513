"""Small inline SVG charts for the memory browser: no script, no library, no network.

Every text that reaches a chart (a space name, an hour label) is escaped here, so the
returned markup is safe to place in a page as is. Each chart has a ``<title>`` and a
``<desc>`` for screen readers; the pages also give the numbers as a table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["bar_chart", "line_chart"]

_W = 640
_BAR_H = 22
_LABEL_W = 260


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def bar_chart(title: str, rows: Sequence[tuple[str, float]], *, unit: str = "") -> str:
    """Horizontal bars, one per ``(label, value)``, longest first as given.

    Args:
        title: The chart's accessible title.
        rows: Labels and non-negative values.
        unit: Appended to each value label (e.g. ``" live"``).

    Returns:
        An ``<svg>`` element as a string ("" when ``rows`` is empty).
    """
    if not rows:
        return ""
    top = max(v for _, v in rows) or 1
    height = _BAR_H * len(rows) + 10
    room = _W - _LABEL_W - 90
    parts = [
        f'<svg class="chart" viewBox="0 0 {_W} {height}" width="100%" role="img" '
        f'preserveAspectRatio="xMinYMin meet" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f"<desc>{escape('; '.join(f'{label}: {_fmt(v)}{unit}' for label, v in rows))}</desc>",
    ]
    for i, (label, value) in enumerate(rows):
        y = 5 + i * _BAR_H
        w = max(1.0, room * value / top) if value > 0 else 0
        short = label if len(label) <= 34 else label[:33] + "\u2026"
        parts.append(f'<text x="{_LABEL_W - 6}" y="{y + 15}" text-anchor="end" class="label">'
                     f"{escape(short)}</text>")
        parts.append(f'<rect x="{_LABEL_W}" y="{y + 3}" width="{w:.1f}" height="{_BAR_H - 6}" class="bar"/>')
        parts.append(f'<text x="{_LABEL_W + w + 6:.1f}" y="{y + 15}" class="value">'
                     f"{escape(_fmt(value) + unit)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def line_chart(
    title: str, x_labels: Sequence[str], series: dict[str, Sequence[float | None]], *, unit: str = " ms"
) -> str:
    """Lines over a shared x axis; None is a gap. The y axis is logarithmic (latencies
    span 10 ms to 10 s) when the values span more than 20x, else linear.

    Args:
        title: The chart's accessible title.
        x_labels: One label per point (the first and last are drawn).
        series: Name to values, each as long as ``x_labels``; at most four series.
        unit: Appended to the axis labels.

    Returns:
        An ``<svg>`` element as a string, or "" when no series has a value.
    """
    values = [v for vs in series.values() for v in vs if v is not None and math.isfinite(v) and v > 0]
    if not values or not x_labels:
        return ""
    lo, hi = min(values), max(values)
    log = hi / lo > 20
    if log:
        lo_t, hi_t = math.log10(lo), math.log10(hi)
    else:
        lo_t, hi_t = 0.0, hi
    if hi_t == lo_t:
        hi_t = lo_t + 1
    left, right, top_m, bottom = 70, 20, 12, 40
    width, height = _W, 240
    plot_w, plot_h = width - left - right, height - top_m - bottom
    n = len(x_labels)

    def x(i: int) -> float:
        return left + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(v: float) -> float:
        t = math.log10(v) if log else v
        return top_m + plot_h * (1 - (t - lo_t) / (hi_t - lo_t))

    desc = "; ".join(
        f"{name}: highest {_fmt(max(p for p in vs if p is not None and math.isfinite(p)))}{unit}"
        for name, vs in series.items() if any(p is not None and math.isfinite(p) for p in vs)
    )
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>",
        f'<line x1="{left}" y1="{top_m + plot_h}" x2="{left + plot_w}" y2="{top_m + plot_h}" class="axis"/>',
        f'<line x1="{left}" y1="{top_m}" x2="{left}" y2="{top_m + plot_h}" class="axis"/>',
    ]
    for v in (lo, hi) if not log else (lo, 10 ** ((lo_t + hi_t) / 2), hi):
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" class="label">'
                     f"{escape(_fmt(v) + unit)}</text>")
    for i in (0, n - 1):
        anchor = "start" if i == 0 else "end"
        parts.append(f'<text x="{x(i):.1f}" y="{height - 12}" text-anchor="{anchor}" class="label">'
                     f"{escape(x_labels[i])}</text>")
    for k, (name, vs) in enumerate(series.items()):
        segment: list[str] = []
        segments: list[list[str]] = []
        for i, point in enumerate(vs):
            if point is None or not math.isfinite(point) or point <= 0:
                if segment:
                    segments.append(segment)
                segment = []
                continue
            segment.append(f"{x(i):.1f},{y(point):.1f}")
        if segment:
            segments.append(segment)
        for seg in segments:
            if len(seg) == 1:
                cx, cy = seg[0].split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="3" class="series s{k}"/>')
            else:
                parts.append(f'<polyline points="{" ".join(seg)}" class="series s{k}"/>')
        parts.append(f'<text x="{left + 10 + 150 * k}" y="{height - 26}" class="legend s{k}">'
                     f"\u25a0 {escape(name)}</text>")
    parts.append("</svg>")
    return "".join(parts)
