#!/usr/bin/env python3
"""The application's ranges in `hrx-trace export --format parquet` tables (format 1.14),
computed with DuckDB as `hrx-trace stats --json` lists them: per range name, its count and
total duration in ns (less the waits on the recorder inside each range, which `stats` leaves
out: `capture_wait_ns`), and the threads it ran on (joined to `threads` by session and thread).
Prints one JSON object {"ranges": {name: {"count", "total_ns", "threads": [names]}},
"markers": {name: count}, "counters": {name: samples}}.

GLOB is a path pattern of export directories, as for kernels.py.

Exit 0 on success, 1 when the query fails, 2 without one argument (or with
`--help`: the usage line), 3 when the `duckdb` package is missing (`python3 -m pip install
duckdb==2.0.1`).

Usage: annotations.py GLOB
"""
import json
import sys

from usage import one_argument

ARGUMENT = one_argument(__doc__)

try:
    import duckdb
except ImportError as error:  # the test skips (or fails in CI) on exit 3
    print(f"missing python package: {error}", file=sys.stderr)
    sys.exit(3)

RANGES = """
SELECT a.name,
       count(*)                              AS count,
       sum(a.duration_ns - a.capture_wait_ns) AS total_ns,
       list(DISTINCT t.name ORDER BY t.name) AS threads
FROM read_parquet('{dir}/annotations.parquet') AS a
JOIN read_parquet('{dir}/threads.parquet') AS t USING (session_id, thread)
WHERE a.kind = 'range'
GROUP BY a.name
ORDER BY a.name
"""

MARKERS = """
SELECT name, count(*) FROM read_parquet('{dir}/annotations.parquet')
WHERE kind = 'marker' GROUP BY name
"""

COUNTERS = """
SELECT name, count(*) FROM read_parquet('{dir}/counters.parquet') GROUP BY name
"""


def main(pattern):
    ranges = duckdb.sql(RANGES.format(dir=pattern)).fetchall()
    markers = duckdb.sql(MARKERS.format(dir=pattern)).fetchall()
    counters = duckdb.sql(COUNTERS.format(dir=pattern)).fetchall()
    print(
        json.dumps(
            {
                "ranges": {
                    name: {"count": count, "total_ns": int(total), "threads": threads}
                    for name, count, total, threads in ranges
                },
                "markers": dict(markers),
                "counters": dict(counters),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENT))
