"""The command line the Parquet checks share: one argument, else their usage line."""
import os
import sys


def one_argument(doc):
    """The one argument. With none, more, or `-h`/`--help`: the `Usage:` line of the script's
    docstring `doc` on standard error and exit 2 (a missing one was an IndexError's
    traceback, and `--help` was read as a directory). Before DuckDB is imported, so without
    it too."""
    args = sys.argv[1:]
    if len(args) == 1 and args[0] not in ("-h", "--help"):
        return args[0]
    line = next(l for l in doc.splitlines() if l.startswith("Usage: "))
    name = os.path.basename(sys.argv[0])
    print(f"usage: {name} {line.split(maxsplit=2)[2]}", file=sys.stderr)
    sys.exit(2)
