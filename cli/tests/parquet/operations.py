#!/usr/bin/env python3
"""Per-operation figures of `hrx-trace export --format parquet` tables, computed with DuckDB
as `hrx-trace stats --json` computes its "operations": the `op_timings` rows joined to their
region's run in `regions` and to their operation in `operations` (the joins the tables
document), less the runs that failed or were cancelled (their `events`), per kind and name:
count and total duration in ns (`duration_ns`: the device span where recorded). Prints one
JSON object {"KIND NAME": {"count", "total_ns", "unjoined"}}, "unjoined" counting the rows
that found no region run or no operation.

Exit 0 on success, 1 when the query fails, 2 without one argument (or with
`--help`: the usage line), 3 when the `duckdb` package is missing (`python3 -m pip install
duckdb==2.0.1`).

Usage: operations.py DIR
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
SELECT o.kind || ' ' || o.name                              AS op,
       count(*) FILTER (WHERE NOT failed)                   AS count,
       coalesce(sum(o.duration_ns) FILTER (WHERE NOT failed), 0) AS total_ns,
       count(*) FILTER (WHERE r.region IS NULL OR g.node IS NULL) AS unjoined
FROM (
  SELECT *, EXISTS (
    SELECT 1 FROM read_parquet('{dir}/events.parquet') AS e
    WHERE e.session_id = t.session_id AND e.runtime = t.runtime
      AND e.submission = t.submission AND e.region = t.region
      AND e.name IN ('failed', 'cancelled')) AS failed
  FROM read_parquet('{dir}/op_timings.parquet') AS t
) AS o
LEFT JOIN read_parquet('{dir}/regions.parquet') AS r
  ON r.session_id = o.session_id AND r.runtime = o.runtime
 AND r.submission = o.submission AND r.region = o.region
LEFT JOIN read_parquet('{dir}/operations.parquet') AS g
  ON g.session_id = o.session_id AND g.runtime = o.runtime
 AND g.graph = o.graph AND g.node = o.node
GROUP BY op
ORDER BY op
"""


def main(directory):
    rows = duckdb.sql(QUERY.format(dir=directory)).fetchall()
    print(
        json.dumps(
            {
                op: {"count": count, "total_ns": int(total), "unjoined": unjoined}
                for op, count, total, unjoined in rows
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENT))
