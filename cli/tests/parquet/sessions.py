#!/usr/bin/env python3
"""The `sessions` rows of `hrx-trace export --format parquet` tables, and how many rows of
the other tables join none (on `session_id`, as the README's fleet query joins them): a
trace whose session record was lost had no `sessions` row, and that join dropped all its
rows. Prints one JSON object {"sessions": [{"host", "pid", "session_record", "clock",
"monotonic_base_ns"}], "unjoined": {table: rows}, "regions": {session_record: rows joined}}.

GLOB is a path pattern of export directories (`exports/*`).

Exit 0 on success, 1 when a query fails, 2 without one argument (or with
`--help`: the usage line), 3 when the `duckdb` package is missing (`python3 -m pip install
duckdb==2.0.1`).

Usage: sessions.py GLOB
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

TABLES = ["buffers", "kernels", "graphs", "operations", "regions", "submissions", "waits",
          "events", "threads", "host_spans", "annotations", "counters", "op_timings"]


def main(pattern):
    sessions = f"read_parquet('{pattern}/sessions.parquet')"
    rows = duckdb.sql(
        f"SELECT host, pid, session_record, clock, monotonic_base_ns FROM {sessions} "
        "ORDER BY session_record").fetchall()
    unjoined = {
        table: duckdb.sql(
            f"SELECT count(*) FROM read_parquet('{pattern}/{table}.parquet') t "
            f"WHERE t.session_id NOT IN (SELECT session_id FROM {sessions})").fetchall()[0][0]
        for table in TABLES
    }
    joined = duckdb.sql(
        f"SELECT s.session_record, count(*) FROM read_parquet('{pattern}/regions.parquet') r "
        f"JOIN {sessions} s USING (session_id) GROUP BY ALL").fetchall()
    print(json.dumps({
        "sessions": [
            {"host": h, "pid": p, "session_record": r, "clock": c, "monotonic_base_ns": b}
            for h, p, r, c, b in rows
        ],
        "unjoined": unjoined,
        "regions": dict(joined),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENT))
