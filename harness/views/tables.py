"""How the command line's tables and one-line messages look: framed tables on a terminal, plain text under
`--no-tui` (popcorn-cli's flag: no colours, no live progress, no box-drawing lines, tables as Markdown a person can
paste), and long text cut at a word. Imports no torch: the command line uses it before a run's workers start."""
import os

from rich import box
from rich.markup import escape
from rich.table import Table

PLAIN_ENV = "NVFP4_ARENA_NO_TUI"  # "1": --no-tui was given (run.py sets it with rich's own variables)


def plain_text() -> None:
    """From now on, in this process and the processes it starts: no terminal codes, no live progress (rich's
    variables) and tables without box-drawing lines."""
    os.environ.update(TTY_COMPATIBLE="0", TTY_INTERACTIVE="0", NO_COLOR="1", **{PLAIN_ENV: "1"})
    os.environ.pop("FORCE_COLOR", None)


def table(title: str) -> Table:
    """An empty table with its title on the left: framed, or under --no-tui a Markdown table."""
    plain = os.environ.get(PLAIN_ENV) == "1"
    return Table(title=title, title_justify="left", box=box.MARKDOWN if plain else box.HEAVY_HEAD)


def frame_table(df, title: str) -> Table:
    """A pandas frame as a table: numbers right-aligned with two decimals, a missing value as '-'; names, ideas and
    messages are text, never markup."""
    import pandas as pd
    shown = table(escape(title))
    for col in df.columns:
        shown.add_column(escape(str(col)), justify="right" if df[col].dtype.kind in "fi" else "left")
    for _, row in df.iterrows():
        shown.add_row(*["-" if not isinstance(v, str) and pd.isna(v) else
                        (f"{v:,.2f}" if isinstance(v, float) else escape(str(v))) for v in row])
    return shown


def shorten(text: str, width: int) -> str:
    """The first line of `text`, cut at the last word that fits in `width` characters, with '…' where cut."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    if len(line) <= width:
        return line
    cut = line[: width - 1]
    words = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return words.rstrip(" ,;:") + "…"
