#!/usr/bin/env python3
"""Decodes a `hrx-trace export --format perfetto` file as Perfetto's `Trace` message with the
official definitions (the `perfetto` package from PyPI ships them, compiled from
protos/perfetto/trace/perfetto_trace.proto) and prints what it holds as one JSON object:

  {"packets", "process_tracks", "tracks", "track_names", "slices", "slice_ends",
   "instants", "flows", "unmatched_flow_ids", "events_on_undeclared_tracks",
   "unknown_fields", "max_depth", "unbalanced_ends"}

Exit 0 on success, 1 when the file does not parse, 3 when the Python packages are missing
(`python3 -m pip install perfetto==0.59.1 protobuf==6.31.1`).

Usage: check.py TRACE
"""
import json
import sys

try:
    from google.protobuf.unknown_fields import UnknownFieldSet
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as error:  # the test skips (or fails in CI) on exit 3
    print(f"missing python packages: {error}", file=sys.stderr)
    sys.exit(3)


def unknown(message):
    """Fields the official schema does not know, in `message` and everything it holds."""
    count = len(UnknownFieldSet(message))
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        values = value if field.label == field.LABEL_REPEATED else [value]
        count += sum(unknown(v) for v in values)
    return count


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    trace = pb.Trace()
    trace.ParseFromString(data)
    if trace.ByteSize() != len(data):
        print(f"decoded {trace.ByteSize()} of {len(data)} bytes", file=sys.stderr)
        return 1

    declared, process_tracks, names = set(), 0, []
    slices = ends = instants = undeclared = unbalanced = max_depth = 0
    starts, terminates = [], []
    events = []
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            declared.add(d.uuid)
            if d.HasField("process"):
                process_tracks += 1
            else:
                names.append(d.name)
        if packet.HasField("track_event"):
            events.append((packet.timestamp, packet.track_event))
    # Slices nest per track in time order (ends before begins at the same instant).
    events.sort(key=lambda e: (e[0], 0 if e[1].type == pb.TrackEvent.TYPE_SLICE_END else 1))
    depth = {}
    for _, e in events:
        if e.track_uuid not in declared:
            undeclared += 1
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            slices += 1
            depth[e.track_uuid] = depth.get(e.track_uuid, 0) + 1
            max_depth = max(max_depth, depth[e.track_uuid])
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            ends += 1
            if depth.get(e.track_uuid, 0) == 0:
                unbalanced += 1
            else:
                depth[e.track_uuid] -= 1
        elif e.type == pb.TrackEvent.TYPE_INSTANT:
            instants += 1
        starts.extend(e.flow_ids)
        terminates.extend(e.terminating_flow_ids)
    flows = set(starts) & set(terminates)
    unmatched = len(set(starts) ^ set(terminates)) + (len(starts) - len(set(starts))) + (
        len(terminates) - len(set(terminates))
    )
    print(
        json.dumps(
            {
                "packets": len(trace.packet),
                "process_tracks": process_tracks,
                "tracks": len(names),
                "track_names": names,
                "slices": slices,
                "slice_ends": ends,
                "instants": instants,
                "flows": len(flows),
                "unmatched_flow_ids": unmatched,
                "events_on_undeclared_tracks": undeclared,
                "unknown_fields": sum(unknown(p) for p in trace.packet),
                "max_depth": max_depth,
                "unbalanced_ends": unbalanced,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
