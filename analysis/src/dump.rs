//! One readable line per trace record, for `hrx-trace dump` (which streams them: nothing is
//! held per record), and the host time every reader orders records by.
//!
//! `{time} {kind} {fields}`: the host time in ms since the session start (blank for records
//! without one), a short kind name, then `key=value` fields. Ids print bare (`sub=12`),
//! byte ranges as `buf7[0..4096]`, strings debug-quoted so a line never breaks.
//!
//! ```text
//!        1.204 ms  submit         rt=1 sub=12 prepared=3 slot=1 producers=[11]
//! ```

use crate::units::{bytes, duration, time};
use hrx_capture::Record;
use hrx_capture::schema::{Access, BufferId, Edge, Payload, Region, RuntimeId, Status, Use};
use std::fmt::{self, Display, Formatter};

/// The host time of a record in ns since the session start (the end of a span).
pub fn host_time_ns(record: &Record) -> Option<u64> {
    Some(match record {
        Record::RuntimeStart(r) => r.time_ns,
        Record::RuntimeEnd(r) => r.time_ns,
        Record::BufferCreated(r) => r.time_ns,
        Record::BufferDropped(r) => r.time_ns,
        Record::Prepared(r) => r.time_ns,
        Record::Submit(r) => r.time_ns,
        Record::SubmitRefused(r) => r.time_ns,
        Record::RegionTiming(r) => r.end_ns,
        Record::OpTiming(r) => r.timing.end_ns,
        Record::ClockCalibration(r) => r.host_ns,
        Record::RegionDone(r) => r.time_ns,
        Record::SubmissionDone(r) => r.time_ns,
        Record::Quarantine(r) => r.time_ns,
        Record::Poison(r) => r.time_ns,
        Record::CopyStreamUnhealthy(r) => r.time_ns,
        Record::FaultInjected(r) => r.time_ns,
        Record::HostWrite(r) => r.time_ns,
        Record::Counters(r) => r.time_ns,
        Record::SessionEnd(r) => r.time_ns,
        Record::SessionStopped(r) => r.time_ns,
        Record::RegionStarted(r) => r.time_ns,
        Record::FatalSignal(r) => r.time_ns,
        Record::RecorderWait(r) => r.end_ns,
        Record::RecordsLost(r) => r.time_ns,
        Record::CaptureFence(r) => r.end_ns,
        Record::DigestSpan(r) => r.end_ns,
        Record::TraceRange(r) => r.time_ns,
        Record::BufferSnapshot(r) => r.time_ns,
        Record::HostClock(r) => r.session_ns,
        Record::HostSpan(r) => r.end_ns,
        Record::AnnotationRange(r) => r.end_ns,
        Record::AnnotationMarker(r) => r.time_ns,
        Record::CounterSample(r) => r.time_ns,
        _ => return None,
    })
}

/// Displays a record as one line.
pub struct Line<'a>(pub &'a Record);

impl Display for Line<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match host_time_ns(self.0) {
            // Full ns resolution, as every host time is written: 18 columns hold 2.7 hours.
            Some(ns) => write!(f, "{:>18}  ", time(ns))?,
            None => write!(f, "{:>18}  ", "")?,
        }
        write!(f, "{:<14} ", kind(self.0))?;
        fields(f, self.0)
    }
}

/// The short kind name of a record.
fn kind(record: &Record) -> &'static str {
    match record {
        Record::SessionStart(_) => "session",
        Record::RuntimeStart(_) => "runtime",
        Record::RuntimeEnd(_) => "runtime-end",
        Record::BufferCreated(_) => "buffer",
        Record::BufferDropped(_) => "buffer-drop",
        Record::Blob(_) => "blob",
        Record::KernelLoaded(_) => "kernel",
        Record::GraphOp(_) => "op",
        Record::Prepared(_) => "prepared",
        Record::Submit(_) => "submit",
        Record::SubmitRefused(_) => "refused",
        Record::CrossWait(_) => "cross-wait",
        Record::RegionTiming(_) => "region-time",
        Record::OpTiming(_) => "op-time",
        Record::ClockCalibration(_) => "calibration",
        Record::RegionDone(_) => "region-done",
        Record::SubmissionDone(_) => "sub-done",
        Record::Quarantine(_) => "quarantine",
        Record::Poison(_) => "poison",
        Record::CopyStreamUnhealthy(_) => "copy-unhealthy",
        Record::FaultInjected(_) => "fault",
        Record::HostWrite(_) => "host-write",
        Record::OutputDigest(_) => "digest",
        Record::Counters(_) => "counters",
        Record::SessionEnd(_) => "session-end",
        Record::SessionStopped(_) => "session-stopped",
        Record::RegionStarted(_) => "region-start",
        Record::FatalSignal(_) => "fatal-signal",
        Record::RecorderWait(_) => "recorder-wait",
        Record::RecordsLost(_) => "records-lost",
        Record::CaptureFence(_) => "capture-fence",
        Record::DigestSpan(_) => "digest-span",
        Record::TraceRange(_) => "range",
        Record::BufferSnapshot(_) => "snapshot",
        Record::HostClock(_) => "host-clock",
        Record::ThreadName(_) => "thread",
        Record::HostSpan(_) => "host-span",
        Record::AnnotationName(_) => "annot-name",
        Record::AnnotationRange(_) => "annot-range",
        Record::AnnotationMarker(_) => "marker",
        Record::CounterSample(_) => "counter",
        Record::OpTimes(_) => "op-times",
        other => other.kind_name(),
    }
}

fn fields(f: &mut Formatter<'_>, record: &Record) -> fmt::Result {
    match record {
        Record::SessionStart(r) => write!(
            f,
            "producer={:?} format={}.{} wall={} host={:?} pid={} backend={:?} device={:?} args={:?}",
            r.producer,
            r.format_version.0,
            r.format_version.1,
            r.wall_clock_utc.to_rfc3339(),
            r.host,
            r.pid,
            r.backend,
            r.device,
            r.args
        ),
        Record::RuntimeStart(r) => {
            write!(
                f,
                "rt={} backend={} device={:?} slots={} capacity={}",
                r.runtime, r.backend, r.device, r.graph_slots, r.capacity
            )?;
            if let Some(fault) = &r.fault {
                write!(f, " fault={fault}")?;
            }
            Ok(())
        }
        Record::RuntimeEnd(r) => write!(f, "rt={}", r.runtime),
        Record::BufferCreated(r) => write!(
            f,
            "rt={} buf={} len={} placement={:?} addr={:#x}",
            r.runtime, r.buffer, r.len_bytes, r.placement, r.device_address
        ),
        Record::BufferDropped(r) => write!(f, "rt={} buf={}", r.runtime, r.buffer),
        Record::Blob(r) => write!(f, "hash={:#018x} len={}", r.hash.0, r.bytes.len()),
        Record::KernelLoaded(r) => {
            write!(
                f,
                "rt={} kernel={} entry={} engine={:?} grid={:?} block={:?} bindings=[",
                r.runtime, r.kernel, r.entry, r.engine, r.grid, r.block
            )?;
            for (i, b) in r.contract.iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                write!(f, "{sep}{} {}B", access(b.access), b.extent_bytes)?;
            }
            write!(f, "] constants={}B", r.constants.len())?;
            if let Some(code) = r.code {
                write!(f, " code={:#018x}", code.0)?;
            }
            if !r.npu_groups.is_empty() {
                write!(f, " groups={:?}", r.npu_groups)?;
            }
            Ok(())
        }
        Record::GraphOp(r) => {
            write!(f, "rt={} graph={} node={} ", r.runtime, r.graph, r.node)?;
            match &r.op {
                hrx_capture::schema::OpKind::Fill { value } => write!(f, "fill={value:#04x}")?,
                hrx_capture::schema::OpKind::Copy => write!(f, "copy")?,
                hrx_capture::schema::OpKind::Kernel { kernel } => write!(f, "kernel={kernel}")?,
                hrx_capture::schema::OpKind::Scoped => write!(f, "scoped")?,
                hrx_capture::schema::OpKind::Npu { kernel } => write!(f, "npu={kernel}")?,
                hrx_capture::schema::OpKind::Host => write!(f, "host")?,
            }
            write!(f, " lane={:?} uses=", r.lane)?;
            uses(f, &r.uses)
        }
        Record::Prepared(r) => {
            write!(
                f,
                "rt={} graph={} prepared={} slots={} parallel={} regions=[",
                r.runtime, r.graph, r.prepared, r.slots, r.parallel
            )?;
            for (i, region) in r.regions.iter().enumerate() {
                let sep = if i == 0 { "" } else { "; " };
                write!(f, "{sep}{i}: ")?;
                region_line(f, region)?;
            }
            write!(f, "]")
        }
        Record::Submit(r) => write!(
            f,
            "rt={} sub={} prepared={} slot={} producers={:?}",
            r.runtime,
            r.submission,
            r.prepared,
            r.slot,
            r.producers.iter().map(|p| p.0).collect::<Vec<_>>()
        ),
        Record::SubmitRefused(r) => write!(
            f,
            "rt={} prepared={} kind={:?} reason={:?}",
            r.runtime, r.prepared, r.kind, r.reason
        ),
        Record::CrossWait(r) => write!(
            f,
            "rt={} sub={} region={} waits on sub={} region={}: {} buf{}[{}..{}]",
            r.runtime,
            r.submission,
            r.region,
            r.on_submission,
            r.on_region,
            r.kind.abbreviation(),
            r.buffer,
            r.start,
            r.end
        ),
        Record::RegionTiming(t) => timing(f, t, None),
        Record::OpTiming(t) => timing(f, &t.timing, Some(t.node.0)),
        Record::ClockCalibration(r) => write!(
            f,
            "rt={} host={} device={} offset={} ±{}",
            r.runtime,
            r.host_ns,
            r.device_ns,
            r.device_offset_ns,
            duration(r.uncertainty_ns)
        ),
        Record::RegionDone(r) => {
            write!(
                f,
                "rt={} sub={} region={} ",
                r.runtime, r.submission, r.region
            )?;
            status(f, &r.status)
        }
        Record::SubmissionDone(r) => {
            write!(f, "rt={} sub={} ", r.runtime, r.submission)?;
            status(f, &r.status)
        }
        Record::Quarantine(r) => {
            write!(f, "rt={} prepared={}", r.runtime, r.prepared)?;
            if let Some(s) = r.submission {
                write!(f, " sub={s}")?;
            }
            if let Some(region) = r.region {
                write!(f, " region={region}")?;
            }
            write!(f, " cause={:?}", r.cause)
        }
        Record::Poison(r) => write!(f, "rt={} buf={} cause={:?}", r.runtime, r.buffer, r.cause),
        Record::CopyStreamUnhealthy(r) => {
            write!(f, "rt={} lane={:?} cause={:?}", r.runtime, r.lane, r.cause)
        }
        Record::FaultInjected(r) => {
            write!(f, "rt={}", r.runtime)?;
            if let Some(s) = r.submission {
                write!(f, " sub={s}")?;
            }
            if let Some(region) = r.region {
                write!(f, " region={region}")?;
            }
            write!(f, " {:?}", r.description)
        }
        Record::HostWrite(r) => bytes_at(
            f,
            (r.runtime, r.buffer, r.offset, r.len_bytes, r.xxh3),
            &r.contents,
        ),
        Record::OutputDigest(r) => {
            write!(
                f,
                "rt={} sub={} buf{}[{}..{}] xxh3={:#018x} ",
                r.runtime, r.submission, r.buffer, r.start, r.end, r.xxh3
            )?;
            payload(f, &r.contents)
        }
        Record::Counters(r) => write!(
            f,
            "rt={} submissions={} native_graphs={} copy_streams={} copied={} (upload {}, compute {}, download {})",
            r.runtime,
            r.submissions,
            r.native_graphs_prepared,
            r.copy_streams_created,
            bytes(r.copied_bytes),
            bytes(r.lane_copy_bytes[0]),
            bytes(r.lane_copy_bytes[1]),
            bytes(r.lane_copy_bytes[2])
        ),
        // The records before it, as the format counts them (`info` counts it too: one more).
        Record::SessionEnd(r) => write!(
            f,
            "records_before={} dropped={}",
            r.records, r.dropped_records
        ),
        Record::SessionStopped(r) => write!(
            f,
            "signal={} done={} asked={}",
            r.signal,
            r.done.map_or_else(|| "-".into(), |n| n.to_string()),
            r.asked.map_or_else(|| "-".into(), |n| n.to_string())
        ),
        Record::RegionStarted(r) => write!(
            f,
            "rt={} sub={} region={}",
            r.runtime, r.submission, r.region
        ),
        Record::FatalSignal(r) => {
            write!(f, "signal={}", r.signal)?;
            if let Some(name) = hrx_capture::schema::signal_name(r.signal) {
                write!(f, " ({name})")?;
            }
            write!(f, " seen-by={:?}", r.witness)?;
            match r.fault_address {
                Some(address) => write!(f, " address={address:#x}"),
                None => Ok(()),
            }
        }
        Record::RecorderWait(r) => {
            write!(f, "thread={} ", r.thread)?;
            // A thread without a name is said so, as `info` says it, not `""`.
            match r.thread_name.as_str() {
                "" => write!(f, "(unnamed)")?,
                name => write!(f, "{name:?}")?,
            }
            write!(
                f,
                " waited={}",
                duration(r.end_ns.saturating_sub(r.start_ns))
            )?;
            if let Some(rt) = r.runtime {
                write!(f, " rt={rt}")?;
            }
            if let Some(s) = r.submission {
                write!(f, " sub={s}")?;
            }
            if let Some(region) = r.region {
                write!(f, " region={region}")?;
            }
            Ok(())
        }
        Record::RecordsLost(r) => {
            write!(f, "total={} lossy={} [", r.total, r.lossy)?;
            for (i, k) in r.by_kind.iter().enumerate() {
                let sep = if i == 0 { "" } else { " " };
                write!(f, "{sep}{}={}", k.kind, k.records)?;
            }
            write!(f, "]")?;
            // A lossy recorder writes one at its first flush, losses or not: its mode, as
            // the export names it (a bare `total=0` read as a loss record).
            if r.total == 0 && r.lossy {
                write!(f, " (the lossy mode's mark: none lost yet)")?;
            }
            Ok(())
        }
        Record::CaptureFence(r) => write!(
            f,
            "rt={} sub={} region={} buf={} waited={}",
            r.runtime,
            r.submission,
            r.region,
            r.buffer,
            duration(r.end_ns.saturating_sub(r.start_ns))
        ),
        Record::DigestSpan(r) => write!(
            f,
            "rt={} sub={} buf={} bytes={}..{} took={}",
            r.runtime,
            r.submission,
            r.buffer,
            r.start,
            r.end,
            duration(r.end_ns.saturating_sub(r.start_ns))
        ),
        Record::TraceRange(r) => {
            write!(f, "rt={} subs={}..", r.runtime, r.start)?;
            if let Some(end) = r.end {
                write!(f, "{end}")?;
            }
            write!(f, " trigger={:?}", r.trigger)?;
            if let Some(from) = &r.trimmed_from {
                write!(f, " trimmed_from={from:?}")?;
            }
            match &r.fault {
                Some(fault) => match (&fault.from_start, fault.fired_in) {
                    (Some(spec), _) => write!(f, " fault={spec}"),
                    (None, Some(at)) => write!(f, " fault=fired-in-sub-{at}"),
                    (None, None) => write!(f, " fault=fired-before"),
                },
                None => Ok(()),
            }
        }
        Record::BufferSnapshot(r) => bytes_at(
            f,
            (r.runtime, r.buffer, r.offset, r.len_bytes, r.xxh3),
            &r.contents,
        ),
        Record::HostClock(r) => write!(
            f,
            "source={} ticks={} monotonic={} ns (±{} ns) rate={:.6} GHz{}",
            r.source.name(),
            r.ticks,
            r.monotonic_ns,
            r.error_ns,
            r.ticks_per_second() / 1e9,
            if r.next_session_ns != r.session_ns {
                format!(" stepped to {}", time(r.next_session_ns))
            } else {
                String::new()
            }
        ),
        Record::ThreadName(r) => {
            write!(f, "thread={} tid={} name={:?}", r.thread, r.os_tid, r.name)
        }
        Record::HostSpan(r) => {
            write!(
                f,
                "thread={} {} rt={} sub={}",
                r.thread,
                r.kind.label(),
                r.runtime,
                r.submission
            )?;
            if let Some(region) = r.region {
                write!(f, " region={region}")?;
            }
            write!(f, " took={}", duration(r.end_ns.saturating_sub(r.start_ns)))
        }
        Record::AnnotationName(r) => write!(f, "name={} text={:?}", r.name, r.text),
        Record::AnnotationRange(r) => write!(
            f,
            "thread={} name={} took={}",
            r.thread,
            r.name,
            duration(r.end_ns.saturating_sub(r.start_ns))
        ),
        Record::AnnotationMarker(r) => write!(f, "thread={} name={}", r.thread, r.name),
        Record::CounterSample(r) => {
            write!(f, "thread={} name={} value={}", r.thread, r.name, r.value.0)
        }
        Record::OpTimes(r) => write!(
            f,
            "runtime={} source={:?}: {}",
            r.runtime.0,
            r.source,
            r.source.describe()
        ),
        _ => write!(
            f,
            "(a record kind this hrx-trace does not describe; see --json)"
        ),
    }
}

fn access(access: Access) -> &'static str {
    match access {
        Access::Read => "R",
        Access::Write => "W",
        Access::ReadWrite => "RW",
    }
}

fn uses(f: &mut Formatter<'_>, uses: &[Use]) -> fmt::Result {
    write!(f, "[")?;
    for (i, u) in uses.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        write!(
            f,
            "{sep}{} buf{}[{}..{}]",
            access(u.access),
            u.buffer,
            u.start,
            u.end
        )?;
    }
    write!(f, "]")
}

fn edges(f: &mut Formatter<'_>, name: &str, edges: &[Edge]) -> fmt::Result {
    if edges.is_empty() {
        return Ok(());
    }
    write!(f, " {name}=[")?;
    for (i, e) in edges.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        write!(
            f,
            "{sep}{}->{} {} buf{}[{}..{}]",
            e.producer,
            e.consumer,
            e.kind.abbreviation(),
            e.buffer,
            e.start,
            e.end
        )?;
    }
    write!(f, "]")
}

fn region_line(f: &mut Formatter<'_>, r: &Region) -> fmt::Result {
    write!(
        f,
        "{:?} {:?} nodes={:?}",
        r.queue,
        r.kind,
        r.nodes.iter().map(|n| n.0).collect::<Vec<_>>()
    )?;
    edges(f, "deps", &r.dependencies)?;
    edges(f, "internal", &r.internal_edges)?;
    if r.copy_bytes > 0 {
        write!(f, " copies={}", bytes(r.copy_bytes))?;
    }
    Ok(())
}

fn timing(
    f: &mut Formatter<'_>,
    t: &hrx_capture::schema::RegionTiming,
    node: Option<u32>,
) -> fmt::Result {
    write!(
        f,
        "rt={} sub={} region={}",
        t.runtime, t.submission, t.region
    )?;
    if let Some(node) = node {
        write!(f, " node={node}")?;
    }
    write!(f, " host={}", duration(t.end_ns.saturating_sub(t.start_ns)))?;
    if let Some(d) = t.device {
        write!(
            f,
            " device={}",
            duration(d.end_ns.saturating_sub(d.start_ns))
        )?;
    }
    Ok(())
}

fn status(f: &mut Formatter<'_>, status: &Status) -> fmt::Result {
    match status {
        Status::Ok => write!(f, "ok"),
        Status::Failed { error } => write!(f, "failed {error:?}"),
        Status::Cancelled { reason } => write!(f, "cancelled {reason:?}"),
    }
}

/// Bytes of a buffer with their contents: a host write or a snapshot,
/// `(runtime, buffer, offset, length, xxh3)`.
fn bytes_at(
    f: &mut Formatter<'_>,
    (runtime, buffer, offset, len, xxh3): (RuntimeId, BufferId, u64, u64, u64),
    contents: &Payload,
) -> fmt::Result {
    write!(
        f,
        "rt={runtime} buf{buffer}[{offset}..{}] xxh3={xxh3:#018x} ",
        offset.saturating_add(len)
    )?;
    payload(f, contents)
}

fn payload(f: &mut Formatter<'_>, payload: &Payload) -> fmt::Result {
    match payload {
        Payload::Inline(b) => write!(f, "contents=inline {}", bytes(b.len() as u64)),
        Payload::Blob { hash, len_bytes } => {
            write!(f, "contents=blob {:#018x} {}", hash.0, bytes(*len_bytes))
        }
        Payload::Omitted { len_bytes } => write!(f, "contents=omitted {}", bytes(*len_bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx_capture::schema::{PreparedId, RuntimeId, SubmissionIndex, Submit};

    #[test]
    fn submit_reads_as_one_line() {
        let record = Record::Submit(Submit {
            runtime: RuntimeId(1),
            prepared: PreparedId(3),
            submission: SubmissionIndex(12),
            slot: 1,
            producers: vec![SubmissionIndex(11)],
            time_ns: 1_204_000,
        });
        assert_eq!(
            Line(&record).to_string(),
            "       1.204000 ms  submit         rt=1 sub=12 prepared=3 slot=1 producers=[11]"
        );
    }

    /// A fatal signal's line names the signal, as `info` does (it read `signal=10`).
    #[test]
    fn a_fatal_signal_is_named() {
        use hrx_capture::schema::{FatalSignal, SignalWitness};
        let line = |signal, fault_address| {
            Line(&Record::FatalSignal(FatalSignal {
                time_ns: 2_000_000,
                signal,
                witness: SignalWitness::Handler,
                fault_address,
            }))
            .to_string()
        };
        assert!(
            line(10, None).ends_with("signal=10 (SIGUSR1) seen-by=Handler"),
            "{}",
            line(10, None)
        );
        assert!(line(11, Some(0x10)).ends_with("signal=11 (SIGSEGV) seen-by=Handler address=0x10"));
        // A number without a name stays a number.
        assert!(line(40, None).ends_with("signal=40 seen-by=Handler"));
    }

    /// The record kinds of format 1.1 (capture work and losses) read as lines with their
    /// times, like every other kind, not as "a record kind this hrx-trace does not describe".
    #[test]
    fn capture_fences_recorder_waits_and_losses_are_described() {
        use hrx_capture::schema::{
            BufferId, CaptureFence, LostKind, RecorderWait, RecordsLost, RegionIndex,
        };
        let fence = Record::CaptureFence(CaptureFence {
            runtime: RuntimeId(1),
            submission: SubmissionIndex(4),
            region: RegionIndex(2),
            buffer: BufferId(9),
            start_ns: 1_000_000,
            end_ns: 1_500_000,
        });
        let wait = Record::RecorderWait(RecorderWait {
            thread: 3,
            thread_name: "worker".into(),
            start_ns: 2_000_000,
            end_ns: 2_250_000,
            runtime: Some(RuntimeId(1)),
            submission: Some(SubmissionIndex(5)),
            region: None,
        });
        let lost = Record::RecordsLost(RecordsLost {
            time_ns: 3_000_000,
            lossy: true,
            total: 7,
            by_kind: vec![LostKind {
                kind: "RegionTiming".into(),
                records: 7,
            }],
        });
        assert_eq!(
            Line(&fence).to_string(),
            "       1.500000 ms  capture-fence  rt=1 sub=4 region=2 buf=9 waited=500 µs"
        );
        assert_eq!(
            Line(&wait).to_string(),
            "       2.250000 ms  recorder-wait  thread=3 \"worker\" waited=250 µs rt=1 sub=5"
        );
        assert_eq!(
            Line(&lost).to_string(),
            "       3.000000 ms  records-lost   total=7 lossy=true [RegionTiming=7]"
        );
    }

    /// A recorder wait of a thread without a name says `(unnamed)`, as `info` does: it
    /// read `thread=3 ""`.
    #[test]
    fn a_recorder_wait_of_an_unnamed_thread_says_so() {
        use hrx_capture::schema::RecorderWait;
        let wait = Record::RecorderWait(RecorderWait {
            thread: 3,
            thread_name: String::new(),
            start_ns: 2_000_000,
            end_ns: 2_250_000,
            runtime: None,
            submission: None,
            region: None,
        });
        assert_eq!(
            Line(&wait).to_string(),
            "       2.250000 ms  recorder-wait  thread=3 (unnamed) waited=250 µs"
        );
    }

    /// A stepped clock says where it stepped to in the same units as the time column.
    #[test]
    fn a_stepped_host_clock_is_written_in_host_time_units() {
        use hrx_capture::schema::{HostClock, HostClockSource};
        let clock = Record::HostClock(HostClock {
            source: HostClockSource::Tsc,
            ticks: 7,
            session_ns: 4_000_000,
            monotonic_ns: 9,
            error_ns: 3,
            next_session_ns: 5_000_001,
            ns_per_tick_q32: 1 << 31,
        });
        assert_eq!(
            Line(&clock).to_string(),
            "       4.000000 ms  host-clock     source=TSC ticks=7 monotonic=9 ns (±3 ns) \
             rate=2.000000 GHz stepped to 5.000001 ms"
        );
    }
}
