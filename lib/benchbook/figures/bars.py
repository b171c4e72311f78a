"""Bar charts: fairness indices and other per-configuration numbers, grouped or plain."""

from __future__ import annotations

from collections.abc import Mapping

import plotly.graph_objects as go

from benchbook.figures.style import apply_style, color

Values = Mapping[str, float] | Mapping[str, Mapping[str, float]]


def bar_plot(
    values: Values,
    errors: Values | None = None,
    y_title: str = "",
    x_title: str = "",
    title: str | None = None,
    y_range: tuple[float, float] | None = None,
    text_format: str | None = ".3g",
) -> go.Figure:
    """Bars for category -> value, or grouped bars for group -> {category -> value}.

    errors: same shape as `values` (symmetric error bars, e.g. a confidence half-width); missing
        entries get no bar. Each bar is labelled with its value (`text_format`, None for none).
    """
    if not values:
        raise ValueError("bar_plot: no values given")
    grouped = all(isinstance(v, Mapping) for v in values.values())
    groups: Mapping[str, Mapping[str, float]] = values if grouped else {"": values}  # type: ignore[assignment]
    err_groups = (errors if grouped else {"": errors}) if errors is not None else {}
    fig = go.Figure()
    for i, (group, cats) in enumerate(groups.items()):
        names = list(cats.keys())
        ys = [float(cats[k]) for k in names]
        errs = err_groups.get(group) if err_groups else None
        fig.add_trace(
            go.Bar(
                x=names,
                y=ys,
                name=group or None,
                showlegend=grouped,
                marker_color=color(i),
                error_y=(
                    dict(type="data", array=[float(errs.get(k, 0.0)) for k in names], visible=True)
                    if errs
                    else None
                ),
                text=[format(y, text_format) for y in ys] if text_format else None,
                textposition="outside" if text_format else None,
                cliponaxis=False,
            )
        )
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text=x_title, showgrid=False)
    fig.update_yaxes(title_text=y_title)
    if y_range is not None:
        fig.update_yaxes(range=list(y_range))
    fig.update_layout(meta={"kind": "bar_plot"})
    return apply_style(fig, title)


def fairness_bars(
    values: Values,
    errors: Values | None = None,
    title: str | None = None,
    index_name: str = "Jain's fairness index",
    x_title: str = "",
) -> go.Figure:
    """Fairness indices (0..1) as bars, on a fixed 0..1.05 axis so that figures compare."""
    for v in (values.values() if values else []):
        inner = v.values() if isinstance(v, Mapping) else [v]
        for x in inner:
            if not 0.0 <= float(x) <= 1.0 + 1e-9:
                raise ValueError(f"fairness index {x} outside 0..1")
    fig = bar_plot(values, errors, y_title=index_name, x_title=x_title, title=title,
                   y_range=(0.0, 1.05))
    fig.update_layout(meta={"kind": "fairness_bars"})
    return fig
