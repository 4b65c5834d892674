#!/usr/bin/env python3
"""Decodes a `hrx-trace export --format perfetto` file as Perfetto's `Trace` message with the
official definitions (the `perfetto` package from PyPI ships them, compiled from
protos/perfetto/trace/perfetto_trace.proto) and prints what it holds as one JSON object:

  {"packets", "process_tracks", "tracks", "track_names", "slices", "slice_ends",
   "instants", "flows", "unmatched_flow_ids", "events_on_undeclared_tracks",
   "unknown_fields", "max_depth", "unbalanced_ends", "unresolved_iids",
   "packets_without_state", "slice_names", "runtime_tracks", "processes",
   "clock_snapshots", "timestamp_clock_ids", "first_slice_by_pid", "thread_tracks",
   "counter_tracks", "counter_values", "counters_without_value", "crossing_slices",
   "parents"}

"tracks" and "track_names" are the tracks events go on (no process's, no runtime's: those
with children); "processes" lists each process descriptor (pid, name, cmdline, labels);
"clock_snapshots" each ClockSnapshot ({"clocks": {id: timestamp}, "primary": id});
"timestamp_clock_ids" the sequences' default clocks (TracePacketDefaults);
"first_slice_by_pid" each process's first slice begin timestamp (a track's process found
through its parents).
"thread_tracks" lists each thread track ({"pid", "tid", "name"}: its ThreadDescriptor),
"counter_tracks" each counter track's name (a CounterDescriptor's track), "counter_values"
the TYPE_COUNTER events and "counters_without_value" those of them without a
double_counter_value or not on a counter track. Thread and counter tracks are among "tracks"
(a thread track's name is its thread_name).

Interned names (`InternedData`: event names, categories, debug annotation names and string
values) are resolved as Perfetto's trace processor does, per packet sequence: a packet with
SEQ_INCREMENTAL_STATE_CLEARED starts a fresh state, `interned_data` adds to it, and a packet
with SEQ_NEEDS_INCREMENTAL_STATE before any clear is counted in "packets_without_state" (the
trace processor drops it); an iid missing from the state counts in "unresolved_iids".
"slice_names" maps each slice name to its count.

Nesting: the exporter writes each slice's TYPE_SLICE_END as the next event on its track after
its TYPE_SLICE_BEGIN (in file order), so a begin and that end are one slice. Slices of a
track must nest (a viewer stacks them by time): "crossing_slices" counts slices that start
inside another slice of their track and end after it (the trace processor would close the
wrong one); "parents" maps each nested slice's name to the names of the slices directly
around it, with counts ({"blur": {"blur +1": 10}}: operations inside their region's slice).

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

    declared, process_tracks = set(), 0
    descriptors, parents, processes, pid_of = [], set(), [], {}
    snapshots, clock_ids = [], []
    states, unresolved, without_state = {}, 0, 0
    slice_names = {}
    thread_tracks, counter_tracks, counter_uuids = [], [], set()
    counter_values = counters_without_value = 0

    def resolve(table, iid):
        nonlocal unresolved
        value = table.get(iid)
        if value is None:
            unresolved += 1
        return value

    def annotation(state, a):
        if a.HasField("name_iid"):
            resolve(state["names"], a.name_iid)
        if a.HasField("string_value_iid"):
            resolve(state["strings"], a.string_value_iid)
        for item in a.array_values:
            annotation(state, item)

    open_by_track, paired = {}, {}
    slices = ends = instants = undeclared = unbalanced = max_depth = 0
    starts, terminates = [], []
    events = []
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            declared.add(d.uuid)
            descriptors.append(d)
            if d.HasField("parent_uuid"):
                parents.add(d.parent_uuid)
                pid_of[d.uuid] = pid_of.get(d.parent_uuid)
            if d.HasField("thread"):
                pid_of[d.uuid] = d.thread.pid
                thread_tracks.append(
                    {"pid": d.thread.pid, "tid": d.thread.tid, "name": d.thread.thread_name}
                )
            if d.HasField("counter"):
                counter_tracks.append(d.name)
                counter_uuids.add(d.uuid)
            if d.HasField("process"):
                process_tracks += 1
                pid_of[d.uuid] = d.process.pid
                processes.append(
                    {
                        "pid": d.process.pid,
                        "name": d.process.process_name,
                        "cmdline": list(d.process.cmdline),
                        "labels": list(d.process.process_labels),
                    }
                )
        if packet.HasField("clock_snapshot"):
            c = packet.clock_snapshot
            snapshots.append(
                {
                    "clocks": {str(k.clock_id): k.timestamp for k in c.clocks},
                    "primary": c.primary_trace_clock,
                }
            )
        if packet.HasField("trace_packet_defaults"):
            clock_ids.append(packet.trace_packet_defaults.timestamp_clock_id)
        seq = packet.trusted_packet_sequence_id
        if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED or (
            packet.incremental_state_cleared
        ):
            states[seq] = {"categories": {}, "events": {}, "names": {}, "strings": {}}
        state = states.get(seq)
        if packet.sequence_flags & pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE and state is None:
            without_state += 1
            continue
        if packet.HasField("interned_data"):
            d = packet.interned_data
            for key, entries in (
                ("categories", d.event_categories),
                ("events", d.event_names),
                ("names", d.debug_annotation_names),
            ):
                state[key].update((e.iid, e.name) for e in entries)
            state["strings"].update(
                (e.iid, e.str.decode()) for e in d.debug_annotation_string_values
            )
        if packet.HasField("track_event"):
            e = packet.track_event
            name = e.name
            if e.HasField("name_iid"):
                name = resolve(state["events"], e.name_iid)
            for iid in e.category_iids:
                resolve(state["categories"], iid)
            for a in e.debug_annotations:
                annotation(state, a)
            if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                slice_names[name] = slice_names.get(name, 0) + 1
                open_by_track[e.track_uuid] = (packet.timestamp, name)
            elif e.type == pb.TrackEvent.TYPE_SLICE_END:
                begun = open_by_track.pop(e.track_uuid, None)
                if begun is not None:
                    paired.setdefault(e.track_uuid, []).append(
                        (begun[0], packet.timestamp, begun[1])
                    )
            events.append((packet.timestamp, e))
    names = [
        d.thread.thread_name if d.HasField("thread") else d.name
        for d in descriptors
        if not d.HasField("process") and d.uuid not in parents
    ]
    runtime_tracks = sum(
        1 for d in descriptors if not d.HasField("process") and d.uuid in parents
    )
    first_slice = {}
    for ts, e in events:
        pid = pid_of.get(e.track_uuid)
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN and pid is not None:
            first_slice[str(pid)] = min(first_slice.get(str(pid), ts), ts)
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
        elif e.type == pb.TrackEvent.TYPE_COUNTER:
            counter_values += 1
            if not e.HasField("double_counter_value") or e.track_uuid not in counter_uuids:
                counters_without_value += 1
        starts.extend(e.flow_ids)
        terminates.extend(e.terminating_flow_ids)
    # Nesting per track: by start, the longer first; a stack of the slices around.
    crossing, parents = 0, {}
    for track_slices in paired.values():
        stack = []
        for start, end, name in sorted(track_slices, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack:
                if end > stack[-1][1]:
                    crossing += 1
                outer = parents.setdefault(name, {})
                outer[stack[-1][2]] = outer.get(stack[-1][2], 0) + 1
            stack.append((start, end, name))
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
                "unresolved_iids": unresolved,
                "packets_without_state": without_state,
                "slice_names": slice_names,
                "runtime_tracks": runtime_tracks,
                "processes": processes,
                "clock_snapshots": snapshots,
                "timestamp_clock_ids": clock_ids,
                "first_slice_by_pid": first_slice,
                "thread_tracks": thread_tracks,
                "counter_tracks": counter_tracks,
                "counter_values": counter_values,
                "counters_without_value": counters_without_value,
                "crossing_slices": crossing,
                "parents": parents,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
