"""Charts for the admin dashboard, drawn on the server as inline SVG.

No chart library and no CDN: the platform runs on machines without internet access, and a few
bars, a histogram and a line need nothing more than SVG rectangles and paths. Each chart is an
`<svg class="chart" data-points="N">` whose marks carry a `<title>` (the browser's tooltip)
with the exact value, so a curator (or a test) reads the numbers behind every bar.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ("#417690", "#79aec8", "#e0a040", "#ba2121", "#5b8c5a", "#8a6bb1", "#c77c48")
_FONT = 'font-family="sans-serif" font-size="11"'


def _number(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def _empty(title: str, width: int, height: int) -> SafeString:
    return mark_safe(
        f'<svg class="chart" data-points="0" role="img" aria-label="{escape(title)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#888" {_FONT}>'
        "no data yet</text></svg>"
    )


def bar_chart(
    points: Sequence[tuple[str, float]],
    *,
    title: str,
    width: int = 560,
    height: int = 180,
    unit: str = "",
    color: str = PALETTE[0],
) -> SafeString:
    """Vertical bars, one per (label, value), labels under the axis (thinned when crowded)."""
    if not points or not any(value for _, value in points):
        return _empty(title, width, height)
    left, bottom, top = 36, 28, 10
    plot_w, plot_h = width - left - 8, height - bottom - top
    peak = max(value for _, value in points) or 1
    step = plot_w / len(points)
    every = max(1, round(len(points) / 8))
    marks = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 8}" y2="{top + plot_h}" '
        'stroke="#999"/>',
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end" {_FONT}>{_number(peak)}</text>',
    ]
    for index, (label, value) in enumerate(points):
        bar_h = plot_h * value / peak
        x, y = left + index * step + step * 0.1, top + plot_h - bar_h
        text = f"{escape(label)}: {_number(value)}{escape(unit)}"
        marks.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{step * 0.8:.1f}" '
            f'height="{bar_h:.1f}" fill="{color}" data-value="{_number(value)}">'
            f"<title>{text}</title></rect>"
        )
        if index % every == 0:
            marks.append(
                f'<text x="{x + step * 0.4:.1f}" y="{height - 10}" text-anchor="middle" '
                f"{_FONT}>{escape(label[-5:] if len(label) > 8 else label)}</text>"
            )
    return _svg(title, width, height, len(points), marks)


def hbar_chart(
    items: Sequence[tuple[str, float]],
    *,
    title: str,
    width: int = 360,
    unit: str = "",
) -> SafeString:
    """Horizontal bars, one row per (label, value), largest scale first as given."""
    row = 20
    height = max(row * len(items) + 8, 40)
    if not items or not any(value for _, value in items):
        return _empty(title, width, 60)
    label_w, value_w = 120, 48
    plot_w = width - label_w - value_w
    peak = max(value for _, value in items) or 1
    marks = []
    for index, (label, value) in enumerate(items):
        y = 4 + index * row
        bar_w = plot_w * value / peak
        color = PALETTE[index % len(PALETTE)]
        marks.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" {_FONT}>'
            f"{escape(label[:20])}</text>"
            f'<rect class="bar" x="{label_w}" y="{y + 2}" width="{bar_w:.1f}" height="{row - 6}" '
            f'fill="{color}" data-value="{_number(value)}">'
            f"<title>{escape(label)}: {_number(value)}{escape(unit)}</title></rect>"
            f'<text x="{label_w + bar_w + 4:.1f}" y="{y + 13}" {_FONT}>'
            f"{_number(value)}{escape(unit)}</text>"
        )
    return _svg(title, width, height, len(items), marks)


def line_chart(
    points: Sequence[tuple[str, float]],
    *,
    title: str,
    width: int = 560,
    height: int = 160,
    unit: str = "",
) -> SafeString:
    """A line through (label, value) points with a dot per point (running totals, latency)."""
    if not points:
        return _empty(title, width, height)
    left, bottom, top = 44, 24, 10
    plot_w, plot_h = width - left - 10, height - bottom - top
    peak = max(value for _, value in points) or 1
    step = plot_w / max(len(points) - 1, 1)
    coords = [
        (left + index * step, top + plot_h - plot_h * value / peak)
        for index, (_, value) in enumerate(points)
    ]
    path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(coords))
    marks = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" '
        'stroke="#999"/>',
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end" {_FONT}>'
        f"{_number(peak)}{escape(unit)}</text>",
        f'<path d="{path}" fill="none" stroke="{PALETTE[0]}" stroke-width="2"/>',
    ]
    for (label, value), (x, y) in zip(points, coords, strict=True):
        marks.append(
            f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{PALETTE[0]}" '
            f'data-value="{_number(value)}"><title>{escape(label)}: {_number(value)}'
            f"{escape(unit)}</title></circle>"
        )
    first, last = points[0][0], points[-1][0]
    marks.append(f'<text x="{left}" y="{height - 6}" {_FONT}>{escape(first)}</text>')
    marks.append(
        f'<text x="{width - 10}" y="{height - 6}" text-anchor="end" {_FONT}>{escape(last)}</text>'
    )
    return _svg(title, width, height, len(points), marks)


def _svg(title: str, width: int, height: int, count: int, marks: list[str]) -> SafeString:
    body = "".join(marks)
    return mark_safe(  # every label and value above went through escape()
        f'<svg class="chart" data-points="{count}" role="img" aria-label="{escape(title)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f"<title>{escape(title)}</title>{body}</svg>"
    )
