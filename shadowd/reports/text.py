"""The report as plain-text tables for a terminal (``shadowd report``)."""

from __future__ import annotations

from shadowd.reports.model import ReportData
from shadowd.reports.tables import _NUMERIC, Table, _fmt, empty_note, tables


def _text_table(t: Table) -> str:
    cells = [[_fmt(c) if not isinstance(c, str) else c for c in row] for row in t.rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(t.headers)]
    right = [i > 0 and all(_NUMERIC.match(r[i]) for r in cells) for i in range(len(t.headers))]
    line = lambda row: "  ".join(
        c.rjust(w) if r else c.ljust(w)  # noqa: E731
        for c, w, r in zip(row, widths, right)
    ).rstrip()
    out = [t.title, "=" * len(t.title), line(t.headers), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    if t.note:
        out.append(t.note)
    return "\n".join(out)


def render_text(data: ReportData) -> str:
    """Every table of the report, with the note on missing data first."""
    parts = [data.title, ""]
    note = empty_note(data)
    if note:
        parts += [note, ""]
    if data.accuracy_note:
        parts += [data.accuracy_note, ""]
    parts += [_text_table(t) + "\n" for t in tables(data)]
    return "\n".join(parts)
