"""benchmarks.results: one JSON file per benchmark in benchmarks/results/, which
`python -m qgpu.docgen readme` renders into README.md's performance table.

A benchmark calls `record(NAME, rows)` at its end; each row is {"what", "figure", "how"};
the file keeps the date (UTC), the one-minute load average before and after the run, the
machine (host CPU count, platform) and the command line, so a figure is never shown without
the conditions it was measured under."""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}"


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def record(name: str, rows: list[dict], load_before: float, directory: Path = RESULTS) -> Path:
    """Write benchmarks/results/NAME.json from this run's rows; the path written."""
    for row in rows:
        missing = {"what", "figure", "how"} - set(row)
        if missing:
            raise ValueError(f"result row {row} lacks {sorted(missing)}")
    document = {
        "benchmark": name,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "load": [load_before, load_average()],
        "machine": machine(),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "source": "measured",
        "rows": rows,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(document, indent=1) + "\n")
    return path
