"""The results of a catalogue as one table: a pooled row per rendition, a row per shot.

Every score in it is copied from the job's report (the CLI's JSON report), never recomputed,
so it is the CLI's double bit for bit. JSON keeps the doubles as Python writes them (``repr``,
the shortest text that reads back to the same double) and so does CSV; ``read_json`` and
``read_csv`` give the same table back.
"""

import csv
import io
import json
import os
import pathlib
from typing import Any, Dict, List, Optional, Sequence, Union

from .catalogue import CatalogueJob

COLUMNS = (
    "kind",  # "pooled" (the whole rendition) or "shot"
    "reference",
    "rendition",
    "distorted",
    "model",
    "backend",  # the backend that scored it: "cpu" or "cuda"
    "shot",  # shot index (shot rows)
    "first_frame",
    "last_frame",
    "frames",
    "error",  # a failed job's error (its pooled row only), else empty
)
"""The fixed columns; the score columns (``vmaf_mean``, ``psnr_y_p5``, ...) follow them."""

METRICS = ("vmaf", "psnr_y", "psnr_cb", "psnr_cr")
"""Metrics of the report that become score columns ``<metric>_<statistic>``, with the
statistics the report pools (min, max, mean, harmonic_mean, p5, p10)."""

_INTEGERS = {"shot", "first_frame", "last_frame", "frames"}

Row = Dict[str, Any]


class ScoreTable:
    """Rows (dicts over ``columns``, ``None`` where a row has no value), in catalogue order:
    each rendition's pooled row, then its shot rows. ``reports`` holds each job's full report
    (or its exception), in the same order, when the table was scored rather than read."""

    def __init__(self, rows: Sequence[Row], reports: Optional[Sequence[Any]] = None):
        scores: Dict[str, None] = {}
        for row in rows:
            scores.update((k, None) for k in row if k not in COLUMNS)
        self.columns: List[str] = [*COLUMNS, *scores]
        self.rows: List[Row] = [{c: row.get(c) for c in self.columns} for row in rows]
        self.reports: List[Any] = list(reports or [])

    @classmethod
    def from_reports(cls, jobs: Sequence[CatalogueJob], reports: Sequence[Any]) -> "ScoreTable":
        """The table of scored jobs; a report that is an exception gives an error row."""
        rows: List[Row] = []
        for job, report in zip(jobs, reports):
            head = {
                "reference": job.reference,
                "rendition": job.rendition,
                "distorted": job.distorted,
            }
            if isinstance(report, BaseException):
                # A task's error comes as Ray's RayTaskError; its cause is the job's own error
                # (VmafError and its message), without the task's traceback.
                cause = getattr(report, "cause", None) or report
                error = f"{type(cause).__name__}: {cause}"
                model = job.options.get("model")
                rows.append({"kind": "pooled", **head, "model": model, "error": error})
                continue
            head.update(model=report["model"], backend=report["backend"])
            frames = len(report["frames"])
            rows.append(
                {
                    "kind": "pooled",
                    **head,
                    "first_frame": 0,
                    "last_frame": frames - 1,
                    "frames": frames,
                    **_scores(report["pooled_metrics"]),
                }
            )
            for shot in report.get("shots") or ():
                rows.append(
                    {
                        "kind": "shot",
                        **head,
                        "shot": shot["index"],
                        "first_frame": shot["first_frame"],
                        "last_frame": shot["last_frame"],
                        "frames": shot["last_frame"] - shot["first_frame"] + 1,
                        **_scores(shot["pooled_metrics"]),
                    }
                )
        return cls(rows, reports)

    def pooled(self) -> List[Row]:
        """The pooled row of every rendition."""
        return [r for r in self.rows if r["kind"] == "pooled"]

    def shots(self) -> List[Row]:
        """The shot rows."""
        return [r for r in self.rows if r["kind"] == "shot"]

    def errors(self) -> List[Row]:
        """The rows of failed jobs."""
        return [r for r in self.rows if r["error"] is not None]

    def to_json(self, path: Union[str, "os.PathLike[str]", None] = None) -> str:
        """The rows as a JSON list of objects (keys in column order); written to ``path`` if
        given. Returns the text."""
        text = json.dumps(self.rows, indent=1) + "\n"
        if path is not None:
            pathlib.Path(path).write_text(text, encoding="utf-8")
        return text

    def to_csv(self, path: Union[str, "os.PathLike[str]", None] = None) -> str:
        """The rows as CSV with a header; doubles as ``repr`` writes them, empty cells for
        ``None``. Written to ``path`` if given. Returns the text."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow([_cell(row[c]) for c in self.columns])
        if path is not None:
            pathlib.Path(path).write_text(out.getvalue(), encoding="utf-8")
        return out.getvalue()

    @classmethod
    def read_json(cls, path: Union[str, "os.PathLike[str]"]) -> "ScoreTable":
        """The table ``to_json`` wrote."""
        return cls(json.loads(pathlib.Path(path).read_text(encoding="utf-8")))

    @classmethod
    def read_csv(cls, path: Union[str, "os.PathLike[str]"]) -> "ScoreTable":
        """The table ``to_csv`` wrote, with integers and doubles as they were."""
        with open(path, newline="", encoding="utf-8") as f:
            return cls([{k: _value(k, v) for k, v in row.items()} for row in csv.DictReader(f)])

    def __len__(self) -> int:
        return len(self.rows)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScoreTable):
            return NotImplemented
        return self.columns == other.columns and self.rows == other.rows

    def __repr__(self) -> str:
        return f"ScoreTable({len(self.pooled())} renditions, {len(self.shots())} shots)"


def _scores(pooled: Dict[str, Dict[str, float]]) -> Row:
    return {
        f"{metric}_{stat}": value
        for metric in METRICS
        for stat, value in pooled.get(metric, {}).items()
    }


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _value(column: str, text: str) -> Any:
    if text == "":
        return None
    if column in _INTEGERS:
        return int(text)
    if column not in COLUMNS:
        return float(text)
    return text
