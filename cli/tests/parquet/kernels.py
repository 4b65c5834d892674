#!/usr/bin/env python3
"""Per-kernel figures of `hrx-trace export --format parquet` tables, computed with DuckDB
as `hrx-trace stats --json` computes them: the regions `stats` calls kernels
(`category = 'kernel'`), less the runs that failed or were cancelled (their `events`), per
label: count, total and mean duration in ns (the device span where recorded, else the host
span, as `stats` prefers). Prints one JSON object {label: {"count",
"total_ns", "mean_ns"}}.

GLOB is a path pattern of export directories (`exports/*`: every process's tables at once,
as a fleet query reads them).

Exit 0 on success, 1 when the query fails, 2 without one argument (or with
`--help`: the usage line), 3 when the `duckdb` package is missing (`python3 -m pip install
duckdb==2.0.1`).

Usage: kernels.py GLOB
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

QUERY = """
SELECT label,
       count(*)                  AS count,
       sum(coalesce(device_ns, duration_ns)) AS total_ns,
       avg(coalesce(device_ns, duration_ns)) AS mean_ns
FROM read_parquet('{dir}/regions.parquet') AS r
WHERE category = 'kernel'
  AND NOT EXISTS (
    SELECT 1 FROM read_parquet('{dir}/events.parquet') AS e
    WHERE e.session_id = r.session_id AND e.runtime = r.runtime
      AND e.submission = r.submission AND e.region = r.region
      AND e.name IN ('failed', 'cancelled'))
GROUP BY label
ORDER BY label
"""


def main(pattern):
    rows = duckdb.sql(QUERY.format(dir=pattern)).fetchall()
    print(
        json.dumps(
            {
                label: {"count": count, "total_ns": int(total), "mean_ns": float(mean)}
                for label, count, total, mean in rows
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENT))
