"""A catalogue of scoring work: references, each with the renditions to score against it.

An entry is a dict::

    {"reference": "a.y4m",
     "shots": [0, 120, 300],                       # optional, for every rendition of the entry
     "renditions": [
         "a_1080p_crf28.y4m",                      # a path: named after its file ("a_1080p_crf28")
         {"distorted": "a_720p_crf30.y4m", "name": "720p", "model": "vmaf_4k_v0.6.1"},
     ]}

Besides ``reference`` and ``renditions``, an entry and a rendition may set the
``vmafcuda.score`` options ``model``, ``shots``, ``backend`` and ``psnr``; a rendition's win
over its entry's, which win over the defaults the caller gives. ``shots`` is a list of first
frames, ``None``, or the path of a JSON file holding such a list or an object with
``shot_starts`` (the corpus's ``*.shots.json``).

A catalogue file is JSON (a list of entries) or CSV (one row per rendition, columns
``reference``, ``distorted`` and optionally ``name``, ``model``, ``shots`` (frame numbers
separated by spaces or semicolons, or a shot file), ``backend``, ``psnr`` (true/false); an empty
cell leaves the option unset). Relative paths in a file are relative to the file's folder.
"""

import csv
import json
import os
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

PathLike = Union[str, "os.PathLike[str]"]

OPTIONS = ("model", "shots", "backend", "psnr")
"""The ``vmafcuda.score`` arguments a catalogue may set, besides the two paths."""


class CatalogueError(ValueError):
    """A catalogue that cannot be read or has an invalid entry (the message says where)."""


@dataclass(frozen=True)
class CatalogueJob:
    """One (reference, rendition) pair to score: one Ray task."""

    reference: str
    distorted: str
    rendition: str
    """The rendition's name in the results table."""
    options: Dict[str, Any] = field(default_factory=dict)
    """``vmafcuda.score`` options of this job (entry and rendition merged), without defaults."""


def read_catalogue(catalogue: Union[PathLike, Iterable[Mapping[str, Any]]]) -> List[CatalogueJob]:
    """The jobs of a catalogue (entries, or a JSON / CSV file), in catalogue order. Jobs
    this returned may stand among the entries: they are taken as they are."""
    if isinstance(catalogue, (str, os.PathLike)):
        return _read_file(pathlib.Path(catalogue))
    if isinstance(catalogue, Mapping):
        raise CatalogueError("a catalogue is a list of entries, not one entry")
    return _jobs_of_entries(catalogue, base=None, where="catalogue")


def _read_file(path: pathlib.Path) -> List[CatalogueJob]:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".csv"):
        raise CatalogueError(f"{path}: a catalogue file is .json or .csv")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise CatalogueError(f"cannot read catalogue {path}: {e.strerror or e}") from e
    base = pathlib.Path(os.path.abspath(path)).parent
    if suffix == ".csv":
        return _jobs_of_csv(text, base, str(path))
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as e:
        raise CatalogueError(f"{path}: not JSON: {e}") from e
    if not isinstance(entries, list):
        raise CatalogueError(f"{path}: a catalogue is a JSON list of entries")
    return _jobs_of_entries(entries, base, str(path))


def _jobs_of_entries(
    entries: Iterable[Mapping[str, Any]], base: Optional[pathlib.Path], where: str
) -> List[CatalogueJob]:
    jobs = []
    for i, entry in enumerate(entries):
        if isinstance(entry, CatalogueJob):  # read already (read_catalogue's result)
            jobs.append(entry)
            continue
        at = f"{where}: entry {i}"
        if not isinstance(entry, Mapping):
            raise CatalogueError(f"{at}: an entry is a dict with reference and renditions")
        _check_keys(entry, {"reference", "renditions", *OPTIONS}, at)
        if "reference" not in entry:
            raise CatalogueError(f"{at}: no reference")
        reference = _path(entry["reference"], base, f"{at}: reference")
        renditions = entry.get("renditions")
        if isinstance(renditions, (str, os.PathLike, Mapping)) or not renditions:
            raise CatalogueError(f"{at}: renditions must be a non-empty list")
        shared = _options(entry, base, at)
        for k, rendition in enumerate(renditions):
            jobs.append(_job(reference, rendition, shared, base, f"{at}, rendition {k}"))
    return jobs


def _job(reference, rendition, shared, base, at) -> CatalogueJob:
    if isinstance(rendition, Mapping):
        _check_keys(rendition, {"distorted", "name", *OPTIONS}, at)
        if "distorted" not in rendition:
            raise CatalogueError(f"{at}: no distorted")
        distorted = _path(rendition["distorted"], base, f"{at}: distorted")
        name = rendition.get("name")
        if name is not None and not isinstance(name, str):
            raise CatalogueError(f"{at}: name must be a string, got {name!r}")
        options = {**shared, **_options(rendition, base, at)}
    else:
        distorted = _path(rendition, base, at)
        name = None
        options = dict(shared)
    return CatalogueJob(reference, distorted, name or _stem(distorted), options)


def _jobs_of_csv(text: str, base: pathlib.Path, where: str) -> List[CatalogueJob]:
    reader = csv.DictReader(text.splitlines())
    columns = set(reader.fieldnames or ())
    missing = {"reference", "distorted"} - columns
    if missing:
        raise CatalogueError(f"{where}: no {' or '.join(sorted(missing))} column")
    _check_keys(columns, {"reference", "distorted", "name", *OPTIONS}, where)
    jobs = []
    for line, row in enumerate(reader, start=2):
        at = f"{where}: line {line}"
        cells = {k: v.strip() for k, v in row.items() if k is not None and v and v.strip()}
        if "reference" not in cells or "distorted" not in cells:
            raise CatalogueError(f"{at}: reference and distorted are both needed")
        if "shots" in cells and re.fullmatch(r"[\d\s;,]+", cells["shots"]):
            cells["shots"] = [int(s) for s in re.split(r"[\s;,]+", cells["shots"]) if s]
        if "psnr" in cells:
            cells["psnr"] = _flag(cells["psnr"], at)
        reference = _path(cells.pop("reference"), base, at)
        jobs.append(_job(reference, cells, {}, base, at))
    return jobs


def _options(given: Mapping[str, Any], base, at) -> Dict[str, Any]:
    options = {k: given[k] for k in OPTIONS if k in given}
    if isinstance(options.get("shots"), (str, os.PathLike)):
        options["shots"] = _shot_file(_path(options["shots"], base, f"{at}: shots"), at)
    return options


def _shot_file(path: str, at: str) -> List[int]:
    try:
        data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise CatalogueError(f"{at}: cannot read shot file {path}: {e}") from e
    starts = data.get("shot_starts") if isinstance(data, dict) else data
    if not isinstance(starts, list) or not all(isinstance(s, int) for s in starts):
        raise CatalogueError(f"{at}: {path} holds no list of shot starts")
    return starts


def _check_keys(given: Iterable[str], allowed: set, at: str) -> None:
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise CatalogueError(
            f"{at}: unknown key {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(sorted(allowed))})"
        )


def _path(value: Any, base: Optional[pathlib.Path], at: str) -> str:
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise CatalogueError(f"{at}: expected a path, got {value!r}")
    path = pathlib.Path(value)
    # Paths travel to the workers as strings; those of a file are anchored at its folder so
    # that the catalogue means the same wherever it is run from.
    return str(base / path if base is not None and not path.is_absolute() else path)


def _stem(path: str) -> str:
    return pathlib.PurePath(path).stem


def _flag(text: str, at: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise CatalogueError(f"{at}: psnr must be true or false, got {text!r}")
