"""Calibration figures for people: calibration.md (sandboxed template) and the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from flipgate.calibration.agreement import BUCKETS, Calibration, Figures, Rate
from flipgate.calibration.reading import lines, read
from flipgate.text.escaping import one_line_within

TEMPLATE = "calibration.md.j2"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def ci(interval: tuple[float, float] | None) -> str:
    return "—" if interval is None else f"{interval[0]:.1%}–{interval[1]:.1%}"


def rate_text(rate: Rate) -> str:
    return f"{pct(rate.value)} ({rate.hits:,} of {rate.n:,}; 95% CI {ci(rate.interval)})"


def render_markdown(result: Calibration) -> str:
    from flipgate.output.comment import environment

    template = environment().get_template(TEMPLATE)
    return template.render(result=result, buckets=BUCKETS, pct=pct, ci=ci,
                           reading=lines(read(result.overall))).rstrip("\n") + "\n"


def _figures_table(title: str, figures: Figures) -> Table:
    table = Table(title=Text(title), show_header=True, header_style="bold", title_justify="left")
    table.add_column("figure")
    table.add_column("value")
    kappa = "— (undefined)" if figures.kappa is None else f"{figures.kappa:.3f}"
    for name, value in (("labelled answers", f"{figures.n:,}"),
                        ("agreement", rate_text(figures.agreement)),
                        ("Cohen's kappa", kappa),
                        ("ungrounded precision", rate_text(figures.precision)),
                        ("ungrounded recall", rate_text(figures.recall))):
        table.add_row(name, value)
    return table


def _confusion_table(figures: Figures) -> Table:
    table = Table(title="judge ↓ · person →", show_header=True, header_style="bold",
                  title_justify="left")
    table.add_column("")
    for bucket in BUCKETS:
        table.add_column(bucket, justify="right")
    for judge in BUCKETS:
        table.add_row(judge, *(f"{figures.confusion[judge][human]:,}" for human in BUCKETS))
    return table


def print_calibration(result: Calibration, console: Console) -> None:
    console.print(_figures_table("overall", result.overall))
    console.print(_confusion_table(result.overall))
    for name, figures in result.per_category.items():
        # Category names come from a file: one line, no control characters, no markup.
        console.print(_figures_table(f"category {one_line_within(name, 60)}", figures))
    notes = []
    if result.unlabelled:
        notes.append(f"{result.unlabelled:,} answers left unlabelled")
    if result.unscored:
        notes.append(f"{len(result.unscored):,} skipped: the judge gave them no score")
    if notes:
        console.print(Text("; ".join(notes)))
    verdict, *rest = lines(read(result.overall))
    console.print(Text(verdict, style="bold"))
    for line in rest:
        console.print(Text(line))
