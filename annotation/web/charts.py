"""Small SVG charts drawn on the server (no JavaScript, no chart library).

Each function takes plain numbers and returns safe SVG markup; every piece
of text is escaped.  Coordinates are computed here so that templates stay
free of arithmetic.
"""

from __future__ import annotations

import math

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

INK, MUTED, ACCENT, WARN = "#1d2330", "#5b6475", "#2456c9", "#c0392b"
# Labels readable at the chart's full width (they were 11 px).
FONT = 14


def _num(x: float) -> str:
    return f"{x:.1f}"


def interval_chart(
    points: list[dict],
    *,
    y_min: float = 0.0,
    y_max: float = 1.0,
    width: int = 880,
    height: int = 320,
    chart_id: str = "",
    label: str = "",
    reference: float | None = None,
    y_label: str = "",
) -> SafeString:
    """Points with vertical whiskers: ``points`` are dicts with ``label``, ``value``, ``lo``, ``hi`` (None = missing).

    ``reference`` draws a dashed horizontal line (e.g. the pooled value); ``y_label`` names the y axis.
    """
    left, right, top, bottom = 60, 16, 14, 96
    plot_w, plot_h = width - left - right, height - top - bottom
    span = (y_max - y_min) or 1.0

    def y(v: float) -> float:
        return top + plot_h * (1 - (min(max(v, y_min), y_max) - y_min) / span)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img"'
        f' aria-label="{escape(label)}"{_id(chart_id)}>'
    ]
    for tick in _ticks(y_min, y_max):
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{_num(y(tick))}" y2="{_num(y(tick))}" stroke="#e7eaf2"/>'
            f'<text x="{left - 8}" y="{_num(y(tick) + 5)}" font-size="{FONT}" text-anchor="end" fill="{MUTED}">{tick:.1f}</text>'
        )
    if reference is not None:
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{_num(y(reference))}" y2="{_num(y(reference))}"'
            f' stroke="{WARN}" stroke-dasharray="4 3"/>'
        )
    n = len(points)
    step = plot_w / max(n, 1)
    previous = None
    for i, point in enumerate(points):
        x = left + step * (i + 0.5)
        value, lo, hi = point.get("value"), point.get("lo"), point.get("hi")
        title = escape(point.get("title") or point["label"])
        if lo is not None and hi is not None and abs(hi - lo) < 1e-9:
            # A zero-width interval (every resample gave the same value): a hollow ring says so on the chart.
            parts.append(
                f'<circle cx="{_num(x)}" cy="{_num(y(lo))}" r="8" fill="none" stroke="{INK}" stroke-dasharray="2 2"'
                f' class="zero-width"><title>{title}: interval of zero width [{lo:.3f}, {hi:.3f}]</title></circle>'
            )
        elif lo is not None and hi is not None:
            parts.append(
                f'<line x1="{_num(x)}" x2="{_num(x)}" y1="{_num(y(lo))}" y2="{_num(y(hi))}" stroke="{INK}" stroke-width="1.5"/>'
                f'<line x1="{_num(x - 5)}" x2="{_num(x + 5)}" y1="{_num(y(lo))}" y2="{_num(y(lo))}" stroke="{INK}"/>'
                f'<line x1="{_num(x - 5)}" x2="{_num(x + 5)}" y1="{_num(y(hi))}" y2="{_num(y(hi))}" stroke="{INK}"/>'
            )
        if value is not None:
            if previous is not None and point.get("connect", True):
                parts.append(
                    f'<line x1="{_num(previous[0])}" x2="{_num(x)}" y1="{_num(previous[1])}" y2="{_num(y(value))}"'
                    f' stroke="{ACCENT}" opacity="0.5"/>'
                )
            parts.append(
                f'<circle cx="{_num(x)}" cy="{_num(y(value))}" r="5" fill="{ACCENT}" class="point">'
                f"<title>{title}: {value:.3f}</title></circle>"
            )
            previous = (x, y(value))
        text = escape(point["label"] if len(point["label"]) <= 20 else point["label"][:19] + "…")
        parts.append(
            f'<text x="{_num(x)}" y="{height - bottom + 18}" font-size="{FONT}" text-anchor="end" fill="{INK}"'
            f' transform="rotate(-30 {_num(x)} {height - bottom + 18})">{text}</text>'
        )
    parts.append(
        f'<line x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}" stroke="{MUTED}"/>'
        f'<line x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}" stroke="{MUTED}"/>'
    )
    parts.append(_y_label(y_label, top, plot_h))
    parts.append("</svg>")
    return mark_safe("".join(parts))


def histogram_chart(
    counts: list[int], edges: list[float], *, width: int = 880, height: int = 280, chart_id: str = "", label: str = "",
    x_label: str = "", y_label: str = "",
) -> SafeString:
    """Bars of ``counts`` over the bins ``[edges[i], edges[i+1])`` (the last bin closed); whole-number ticks; the
    axes named by ``x_label`` and ``y_label``."""
    left, right, top, bottom = 56, 16, 14, 60 if x_label else 40
    plot_w, plot_h = width - left - right, height - top - bottom
    highest = max(counts) if counts else 0
    step = count_step(highest)
    y_max = max(step, step * math.ceil(highest / step))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img"'
        f' aria-label="{escape(label)}"{_id(chart_id)}>'
    ]
    for tick in range(0, y_max + 1, step):
        ty = top + plot_h * (1 - tick / y_max)
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{_num(ty)}" y2="{_num(ty)}" stroke="#e7eaf2"/>'
            f'<text x="{left - 8}" y="{_num(ty + 5)}" font-size="{FONT}" text-anchor="end" fill="{MUTED}" class="y-tick">{tick}</text>'
        )
    bar_w = plot_w / max(len(counts), 1)
    for i, count in enumerate(counts):
        h = plot_h * count / y_max
        x = left + i * bar_w
        parts.append(
            f'<rect x="{_num(x + 1)}" y="{_num(top + plot_h - h)}" width="{_num(bar_w - 2)}" height="{_num(h)}"'
            f' fill="{ACCENT}" opacity="0.8" class="bar" data-count="{count}">'
            f"<title>{edges[i]:.2f}–{edges[i + 1]:.2f}: {count}</title></rect>"
        )
    for i, edge in enumerate(edges):
        if i % 2 == 0 or len(edges) <= 6:
            x = left + i * bar_w
            parts.append(f'<text x="{_num(x)}" y="{height - bottom + 20}" font-size="{FONT}" text-anchor="middle" fill="{INK}">{edge:.1f}</text>')
    if x_label:
        parts.append(f'<text x="{_num(left + plot_w / 2)}" y="{height - bottom + 42}" font-size="{FONT}" text-anchor="middle"'
                     f' fill="{MUTED}" class="x-label">{escape(x_label)}</text>')
    parts.append(_y_label(y_label, top, plot_h))
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="{MUTED}"/></svg>')
    return mark_safe("".join(parts))


def count_step(highest: int) -> int:
    """A whole-number tick step for counts up to ``highest``: 1, 2 or 5 times a power of ten, about 4 ticks."""
    if highest <= 5:
        return 1
    raw = highest / 4
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw:
            return int(factor * power)
    return int(10 * power)


def _y_label(text: str, top: float, plot_h: float) -> str:
    """The y axis's name, written upwards along the chart's left edge (left of the tick labels)."""
    if not text:
        return ""
    x, y = 16, top + plot_h / 2
    return (f'<text x="{x}" y="{_num(y)}" font-size="{FONT}" text-anchor="middle" fill="{MUTED}" class="y-label"'
            f' transform="rotate(-90 {x} {_num(y)})">{escape(text)}</text>')


def _id(chart_id: str) -> str:
    return f' id="{escape(chart_id)}"' if chart_id else ""


def _ticks(lo: float, hi: float) -> list[float]:
    step = 0.2 if hi - lo <= 1.2 else 0.5
    first = math.ceil(lo / step - 1e-9) * step
    ticks, t = [], first
    while t <= hi + 1e-9:
        ticks.append(round(t, 6))
        t += step
    return ticks


def line_chart(
    series: list[dict], *, x_label: str = "", y_min: float = 0.0, y_max: float = 1.0, width: int = 520, height: int = 260,
    chart_id: str = "", label: str = "", y_label: str = "",
) -> SafeString:
    """Lines over x in [0, 1]: ``series`` are dicts with ``name``, ``points`` [(x, y), ...], ``color`` and
    optional ``dashed``; a legend names them; ``x_label`` and ``y_label`` name the axes.  Points with y None are skipped."""
    # One legend row per series under the axis label (side by side, a long name ran into the next one).
    legend_row = 20
    left, right, top, bottom = 58, 12, 12, 42 + legend_row * max(1, len(series))
    plot_w, plot_h = width - left - right, height - top - bottom
    span = (y_max - y_min) or 1.0

    def px(x: float) -> float:
        return left + plot_w * x

    def py(y: float) -> float:
        return top + plot_h * (1 - (min(max(y, y_min), y_max) - y_min) / span)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img"'
        f' aria-label="{escape(label)}"{_id(chart_id)}>'
    ]
    for tick in _ticks(y_min, y_max):
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{_num(py(tick))}" y2="{_num(py(tick))}" stroke="#e7eaf2"/>'
            f'<text x="{left - 6}" y="{_num(py(tick) + 4)}" font-size="{FONT}" text-anchor="end" fill="{MUTED}">{tick:.1f}</text>'
        )
    for i in range(0, 11, 2):
        parts.append(f'<text x="{_num(px(i / 10))}" y="{top + plot_h + 18}" font-size="{FONT}" text-anchor="middle" fill="{INK}">{i / 10:.1f}</text>')
    parts.append(f'<text x="{_num(left + plot_w / 2)}" y="{top + plot_h + 38}" font-size="{FONT}" text-anchor="middle" fill="{MUTED}" class="x-label">{escape(x_label)}</text>')
    parts.append(_y_label(y_label, top, plot_h))
    for k, s in enumerate(series):
        points = [(x, y) for x, y in s["points"] if y is not None]
        path = " ".join(f"{_num(px(x))},{_num(py(y))}" for x, y in points)
        dash = ' stroke-dasharray="5 4"' if s.get("dashed") else ""
        parts.append(f'<polyline points="{path}" fill="none" stroke="{s["color"]}" stroke-width="2"{dash} class="series" data-series="{escape(s["name"])}"/>')
        for x, y in points:
            parts.append(f'<circle cx="{_num(px(x))}" cy="{_num(py(y))}" r="2.5" fill="{s["color"]}"><title>{escape(s["name"])}: {x:.1f} → {y:.3f}</title></circle>')
        lx, ly = left + 8, top + plot_h + 38 + legend_row * (k + 1)
        parts.append(f'<line x1="{lx}" x2="{lx + 18}" y1="{ly - 4}" y2="{ly - 4}" stroke="{s["color"]}" stroke-width="2"{dash}/>'
                     f'<text x="{lx + 22}" y="{ly}" font-size="{FONT}" fill="{INK}">{escape(s["name"])}</text>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="{MUTED}"/></svg>')
    return mark_safe("".join(parts))
