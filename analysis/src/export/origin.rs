//! Where a trace's events go on the real clock and in the merged process list: its
//! [`Origin`] (host, process id, command line, clock base, from its `SessionStart`) and the
//! [`ClockDomain`] of the export.
//!
//! # Clocks
//!
//! A trace's host times are session ns: `CLOCK_MONOTONIC` less
//! `SessionStart::monotonic_base_ns`, corrected by the session clock's calibrations
//! (`HostClock`). The export writes absolute times:
//!
//! - [`ClockDomain::Monotonic`] (every trace from one host): `monotonic_base_ns + t +
//!   offset`, where `offset` is the first calibration's `offset_after_ns` (0 without one).
//!   Several processes of one host line up exactly: they share `CLOCK_MONOTONIC`.
//! - [`ClockDomain::Realtime`] (traces from several hosts): the wall clock, `wall_clock_utc +
//!   t + offset` in ns since the Unix epoch: hosts share no monotonic clock, so their traces
//!   line up only as well as their wall clocks agree (NTP: typically within a millisecond).
//!
//! One constant offset per trace keeps the order and nesting of every slice exactly as the
//! trace records them (a piecewise mapping could reorder the ends of nested slices around a
//! calibration by a few ns); the later calibrations differ from it by the session clock's
//! drift, which the recorder bounds by calibrating at every flush.
//!
//! # A lost session
//!
//! Where a trace's `SessionStart` was lost (its first block damaged: [`TraceSession::Lost`]),
//! nothing is made up for it: its host, pid, command line and wall clock are said to be
//! unknown (process labels, Chrome `otherData.session_record`, no wall clock in the Perfetto
//! clock snapshot, null in Parquet `sessions`), and its times are put on `CLOCK_MONOTONIC`
//! from its first calibration read, wherever in the trace it lies ([`read_session`];
//! `monotonic_ns - next_session_ns`: the session's base plus the clock's offset then,
//! which differs from the lost first calibration's by the drift between them), else, where
//! none survived, left as session ns and said to be (Chrome's `otherData.clock`,
//! Parquet's `clock` `session`; the Perfetto export then names no clock at all: no clock
//! snapshot and no `timestamp_clock_id`, so the times are the trace's own, not
//! `CLOCK_MONOTONIC`).
//!
//! # Identifiers
//!
//! The Perfetto track uuids of a trace are derived from [`Origin::key`], an xxh3-64 of its
//! host name, process id, wall-clock start and monotonic base (so two traces of one process
//! id, such as a recycled pid, or of two hosts never collide; a lost session's, of what
//! survived of it: [`Origin::lost`]): the process track is `key`
//! with its low 8 bits cleared, a runtime's track is xxh3-64 of `key` and the runtime id, its
//! low 8 bits cleared, and a queue's track is the runtime's uuid plus the queue's slot + 1.
//! A host thread's track and a counter's (format 1.14) are xxh3-64 of `key`, a tag (`t`,
//! `c`) and the thread's session index or the counter's name id, low 8 bits set.

use hrx_capture::TraceReader;
use hrx_capture::format::FormatVersion;
use hrx_capture::reader::Uncalibrated;
use hrx_capture::schema::{AnnotationId, HostClock, Record, RuntimeId, SessionStart};
use std::io::Read;

/// What an export knows of a trace's session before its pass ([`read_session`]).
#[derive(Clone, Debug, PartialEq)]
pub enum TraceSession {
    /// Its `SessionStart`.
    Recorded(SessionStart),
    /// Its `SessionStart` was lost (its first block damaged): its host, pid, command line
    /// and wall clock are unknown, and no export makes them up. `clock`, the first
    /// calibration read (format 1.6), puts its times back on `CLOCK_MONOTONIC` (its
    /// reading less the session's: to within the clock's drift since the lost first
    /// calibration); without one they stay ns from the session's start.
    Lost {
        /// The first `HostClock` read.
        clock: Option<HostClock>,
        /// What survived of the trace's start, as a number: an xxh3 of its first block read
        /// ([`Survived`]). The trace's identity where its session's is unknown.
        survived: u64,
        /// Its header's format version: whether it records calibrations, where none was
        /// read ([`Uncalibrated`]).
        format: FormatVersion,
    },
}

impl TraceSession {
    /// Its `SessionStart`, where it was read.
    pub fn start(&self) -> Option<&SessionStart> {
        match self {
            TraceSession::Recorded(s) => Some(s),
            TraceSession::Lost { .. } => None,
        }
    }

    /// Where its session was lost, what is unknown and what its times are on, in words.
    pub fn lost_note(&self) -> Option<String> {
        match self {
            TraceSession::Recorded(_) => None,
            TraceSession::Lost { clock, format, .. } => Some(lost_note(
                clock.is_none().then(|| Uncalibrated::of(*format)),
            )),
        }
    }

    /// `CLOCK_MONOTONIC` at the session's start, ns: recorded, or recovered from a
    /// calibration (`None` where neither is there).
    pub fn monotonic_base_ns(&self) -> Option<u64> {
        match self {
            TraceSession::Recorded(s) => Some(s.monotonic_base_ns),
            TraceSession::Lost { clock, .. } => clock.as_ref().map(recovered_base_ns),
        }
    }
}

/// What a lost session leaves unknown and what its times are on, in words: the export's
/// labels, marks and warning. `uncalibrated`: why no calibration put them on
/// `CLOCK_MONOTONIC` (as `info`'s `clock` line says it), `None` where one did.
fn lost_note(uncalibrated: Option<Uncalibrated>) -> String {
    // "Damaged" alone named a file cut inside its first block, which is not damaged (a
    // fresh user's pass, session 59).
    const LOST: &str = "session record lost (its first block damaged or cut short): host, pid, \
                        command line and wall clock unknown";
    match uncalibrated {
        None => {
            format!("{LOST}; times put on CLOCK_MONOTONIC from the first clock calibration read")
        }
        Some(why) => {
            format!("{LOST}; times are ns from the session's start, not CLOCK_MONOTONIC ({why})")
        }
    }
}

/// Records read for a `SessionStart` (the first record) before it is taken as lost.
const SESSION_RECORDS: usize = 16;

/// Records of the first block read that [`Survived`] hashes, at most, counted from the
/// trace's first record read.
const SURVIVED_RECORDS: usize = SESSION_RECORDS + (1 << 16);

/// Reads the start of a trace for its session: its `SessionStart`, or where that was lost,
/// its first calibration ([`TraceSession::Lost`]), wherever it lies. Records that cannot be
/// read are skipped (the export's own pass says what was lost).
///
/// The recorder calibrates on its timer, not per block: a busy recording writes hundreds
/// of thousands of records, several blocks, between two calibrations, so the first
/// surviving block may hold none. A lost session is read on until its first calibration,
/// to the end of the trace where none survived (so such a damaged trace is read up to twice
/// by an export, an intact one only as far as its first record); a trace older than format
/// 1.6 holds none and is read only to the end of its first block (what is hashed of it).
pub fn read_session<R: Read>(reader: TraceReader<R>) -> TraceSession {
    // An older trace holds no calibration, and is not read past its first block for one.
    let format = reader.header().version;
    let calibrated = format >= FormatVersion::CALIBRATED;
    let mut clock = None;
    let mut survived = Survived::default();
    for (n, (at, record)) in reader.filter_map(Result::ok).enumerate() {
        if n < SESSION_RECORDS
            && let Record::SessionStart(s) = record
        {
            return TraceSession::Recorded(s);
        }
        let hashed = n < SURVIVED_RECORDS && survived.add(at, &record);
        if clock.is_none()
            && let Record::HostClock(c) = record
        {
            clock = Some(c);
        }
        // Read on to the end of the first block read (or as far as it is hashed), and for
        // a calibration where the trace's format has them.
        let enough = !hashed && (clock.is_some() || !calibrated);
        if n + 1 >= SESSION_RECORDS && enough {
            break;
        }
    }
    TraceSession::Lost {
        clock,
        survived: survived.digest(),
        format,
    }
}

/// What survived of a lost session's start: an xxh3-64 of the records of the first block
/// read (each one's block offset in the file and its postcard encoding, as the block holds
/// them; those among the trace's first [`SURVIVED_RECORDS`] records read).
///
/// It tells two traces whose `SessionStart` was lost apart where no calibration does (a
/// trace older than format 1.6, or one whose calibrations were damaged too): a block holds
/// its recording's own times, so two recordings differ, and the same file gives the same
/// number every time, wherever it lies (a digest of the file's name or inode would change
/// with a copy, and tell a copy from its original). A trace of which no record survived has
/// nothing of its own to hash: all such traces share one number.
#[derive(Default)]
pub(crate) struct Survived {
    hash: xxhash_rust::xxh3::Xxh3Default,
    /// The first block read: its offset.
    block: Option<u64>,
}

impl Survived {
    /// Hashes `record`, read from the block at offset `at`, if that is the first block read
    /// (returns whether it was).
    pub(crate) fn add(&mut self, at: u64, record: &Record) -> bool {
        if *self.block.get_or_insert(at) != at {
            return false;
        }
        self.hash.update(&at.to_le_bytes());
        // A record that does not encode (none does: it was decoded) counts by its offset.
        if let Ok(bytes) = postcard::to_stdvec(record) {
            self.hash.update(&bytes);
        }
        true
    }

    /// The digest of what was hashed.
    pub(crate) fn digest(&self) -> u64 {
        self.hash.digest()
    }
}

/// `CLOCK_MONOTONIC` at session ns 0, from a calibration: its reading less the session
/// clock's there.
fn recovered_base_ns(clock: &HostClock) -> u64 {
    clock.monotonic_ns.wrapping_sub(clock.next_session_ns)
}

/// The clock an export's timestamps are on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockDomain {
    /// `CLOCK_MONOTONIC` of the one host every trace comes from, in ns.
    #[default]
    Monotonic,
    /// The wall clock (UTC), in ns since the Unix epoch: traces from several hosts.
    Realtime,
}

impl ClockDomain {
    /// The domain that lines up `sessions`: [`ClockDomain::Monotonic`] when they all come
    /// from one host (or there is at most one), else [`ClockDomain::Realtime`].
    pub fn for_sessions<'a>(sessions: impl IntoIterator<Item = &'a SessionStart>) -> ClockDomain {
        let mut hosts = sessions.into_iter().map(|s| s.host.as_str());
        match hosts.next() {
            Some(first) if hosts.any(|h| h != first) => ClockDomain::Realtime,
            _ => ClockDomain::Monotonic,
        }
    }

    /// Perfetto's `BuiltinClock` id of the domain (`BUILTIN_CLOCK_MONOTONIC` 3,
    /// `BUILTIN_CLOCK_REALTIME` 1).
    pub fn perfetto_clock_id(self) -> u32 {
        match self {
            ClockDomain::Monotonic => 3,
            ClockDomain::Realtime => 1,
        }
    }

    /// The clock's usual name: `CLOCK_MONOTONIC` or `CLOCK_REALTIME`.
    pub fn name(self) -> &'static str {
        match self {
            ClockDomain::Monotonic => "CLOCK_MONOTONIC",
            ClockDomain::Realtime => "CLOCK_REALTIME",
        }
    }
}

/// An export's clock: its [`ClockDomain`] and the time Chrome JSON's `ts` count from.
///
/// Chrome JSON's `ts` is a number of µs that viewers read as a double: 53 bits hold about 9
/// × 10^15 ns, which `CLOCK_MONOTONIC` passes after 104 days of uptime and the wall clock
/// (1.8 × 10^18 ns) always does, so absolute µs with their ns decimals lose digits and
/// slices cross. The JSON writes `ts` from `base_ns` instead (named in `otherData`); the
/// Perfetto protobuf keeps absolute ns (64-bit integers lose nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportClock {
    /// The clock the timestamps are on.
    pub domain: ClockDomain,
    /// Chrome JSON's `ts` 0 on `domain`, ns (0: absolute).
    pub base_ns: u64,
}

impl ExportClock {
    /// Absolute timestamps on `domain`.
    pub fn absolute(domain: ClockDomain) -> ExportClock {
        ExportClock { domain, base_ns: 0 }
    }

    /// The clock that lines up `sessions` ([`ClockDomain::for_sessions`]), counting from
    /// the whole second a second before the earliest session's base on it (calibration
    /// offsets and early records stay above 0).
    ///
    /// A trace whose session was lost counts on `CLOCK_MONOTONIC` from its recovered base,
    /// where it has one; on the wall clock, or without one, the clock keeps absolute
    /// timestamps (its times are as they are).
    pub fn for_sessions<'a>(
        sessions: impl IntoIterator<Item = &'a TraceSession> + Clone,
    ) -> ExportClock {
        let domain =
            ClockDomain::for_sessions(sessions.clone().into_iter().filter_map(|s| s.start()));
        let mut earliest: Option<u64> = None;
        for s in sessions {
            let base = match (domain, s) {
                (ClockDomain::Realtime, TraceSession::Recorded(s)) => wall_ns(s),
                (ClockDomain::Monotonic, s) => match s.monotonic_base_ns() {
                    Some(base) => base,
                    None => return ExportClock::absolute(domain),
                },
                (ClockDomain::Realtime, TraceSession::Lost { .. }) => {
                    return ExportClock::absolute(domain);
                }
            };
            earliest = Some(earliest.map_or(base, |e| e.min(base)));
        }
        const SECOND: u64 = 1_000_000_000;
        let base_ns = earliest.map_or(0, |e| (e / SECOND).saturating_sub(1) * SECOND);
        ExportClock { domain, base_ns }
    }
}

/// The wall clock at `s`'s session base, ns since the Unix epoch (0 before it).
fn wall_ns(s: &SessionStart) -> u64 {
    s.wall_clock_utc
        .timestamp_nanos_opt()
        .map_or(0, |ns| ns.max(0) as u64)
}

/// One trace's process and clock, from its `SessionStart` (defaults where it has none).
#[derive(Clone, Debug, Default)]
pub(crate) struct Origin {
    pub host: String,
    /// The pid the export writes: the recorded one, unless another host's trace in the
    /// same export recorded it too (see [`Origin::recorded_pid`]).
    pub pid: u32,
    /// The recorded pid, where the export writes another (`Some`): two hosts' (or
    /// containers') processes with one pid, such as pid 1, would merge into one process
    /// in a viewer, which keys processes by pid.
    pub recorded_pid: Option<u32>,
    pub args: Vec<String>,
    /// `CLOCK_MONOTONIC` at the session base, ns.
    pub monotonic_base_ns: u64,
    /// The wall clock at the session base, ns since the Unix epoch (0 before it).
    pub wall_ns: u64,
    /// See the module docs.
    pub key: u64,
    /// The session clock's offset from `CLOCK_MONOTONIC`, once fixed.
    offset_ns: Option<i64>,
    domain: ClockDomain,
    /// Its `SessionStart` was lost: host, pid, command line and wall clock unknown.
    pub lost: bool,
    /// Where `lost`: whether its times were put on `CLOCK_MONOTONIC` (from a calibration),
    /// else they are ns from the session's start.
    pub recovered: bool,
    /// Where `lost` and not `recovered`: why no calibration was read (by the trace's format).
    uncalibrated: Option<Uncalibrated>,
}

impl Origin {
    /// The origin of a trace that starts with `s`, exported on `domain`.
    pub fn new(s: &SessionStart, domain: ClockDomain) -> Origin {
        let wall_ns = wall_ns(s);
        let mut key_bytes = Vec::with_capacity(s.host.len() + 32);
        key_bytes.extend_from_slice(s.host.as_bytes());
        key_bytes.push(0);
        key_bytes.extend_from_slice(&s.pid.to_le_bytes());
        key_bytes.extend_from_slice(&wall_ns.to_le_bytes());
        key_bytes.extend_from_slice(&s.monotonic_base_ns.to_le_bytes());
        Origin {
            host: s.host.clone(),
            pid: s.pid,
            recorded_pid: None,
            args: s.args.clone(),
            monotonic_base_ns: s.monotonic_base_ns,
            wall_ns,
            key: xxhash_rust::xxh3::xxh3_64(&key_bytes),
            offset_ns: None,
            domain,
            lost: false,
            recovered: false,
            uncalibrated: None,
        }
    }

    /// The origin of a trace whose `SessionStart` was lost: on `CLOCK_MONOTONIC` from
    /// `clock`, its first calibration, where there is one (and the export is on that
    /// clock), else its session times as they are. Its key is made of the calibration
    /// (unique to the recording, as a session's base is) and of `survived`, what survived
    /// of the trace's start ([`Survived`]), so that two such traces keep apart in a
    /// data set, with a calibration or without one (all of those without shared one key),
    /// and the same trace exported twice keeps its key. `format`: its header's version, which
    /// says why it has no calibration where none was read ([`Uncalibrated`]).
    pub fn lost(
        domain: ClockDomain,
        clock: Option<&HostClock>,
        survived: u64,
        format: FormatVersion,
    ) -> Origin {
        let mut key_bytes = b"hrx session lost".to_vec();
        key_bytes.extend_from_slice(&survived.to_le_bytes());
        // Without a calibration up front, times stay session ns throughout: one read later
        // in the pass would move only the times after it.
        let mut origin = Origin {
            domain,
            lost: true,
            offset_ns: Some(0),
            ..Origin::default()
        };
        if let Some(c) = clock {
            for v in [c.ticks, c.session_ns, c.monotonic_ns, c.next_session_ns] {
                key_bytes.extend_from_slice(&v.to_le_bytes());
            }
            if domain == ClockDomain::Monotonic {
                origin.monotonic_base_ns = recovered_base_ns(c);
                origin.offset_ns = Some(0);
                origin.recovered = true;
            }
        }
        if !origin.recovered {
            origin.uncalibrated = Some(Uncalibrated::of(format));
        }
        origin.key = xxhash_rust::xxh3::xxh3_64(&key_bytes);
        origin
    }

    /// What is unknown and what its times are on, in words, where its session was lost.
    pub fn lost_note(&self) -> Option<String> {
        self.lost.then(|| lost_note(self.uncalibrated))
    }

    /// Takes the first calibration's offset, unless a time was mapped already.
    pub fn calibrate(&mut self, clock: &HostClock) {
        if self.offset_ns.is_none() {
            self.offset_ns = Some(clock.offset_after_ns(self.monotonic_base_ns));
        }
    }

    /// Session ns `t` on the export's clock, ns (see the module docs).
    pub fn time(&mut self, t: u64) -> u64 {
        let offset = *self.offset_ns.get_or_insert(0);
        let base = match self.domain {
            ClockDomain::Monotonic => self.monotonic_base_ns,
            ClockDomain::Realtime => self.wall_ns,
        };
        base.wrapping_add(t).wrapping_add_signed(offset)
    }

    /// The process's labels: `host=NAME`, and `recorded pid=N` where the export writes
    /// another pid (Perfetto's `process_labels`, one each; Chrome's joined by commas).
    pub fn labels(&self) -> Vec<String> {
        if let Some(note) = self.lost_note() {
            return vec![note];
        }
        let host = format!("host={}", self.host);
        match self.recorded_pid {
            Some(pid) => vec![host, format!("recorded pid={pid}")],
            None => vec![host],
        }
    }

    /// The process's name: its program's file name, or `hrx process` without one
    /// (`hrx process (session record lost)` where it was lost).
    pub fn name(&self) -> String {
        if self.lost {
            return "hrx process (session record lost)".to_owned();
        }
        self.args
            .first()
            .and_then(|a| std::path::Path::new(a).file_name())
            .map_or_else(
                || "hrx process".to_owned(),
                |n| n.to_string_lossy().into_owned(),
            )
    }

    /// Perfetto uuid of the process track.
    pub fn process_uuid(&self) -> u64 {
        (self.key & !0xff).max(0x100)
    }

    /// Perfetto uuid of the runtime's track; its queues' are this plus slot + 1.
    pub fn runtime_uuid(&self, runtime: RuntimeId) -> u64 {
        let mut bytes = [0u8; 12];
        bytes[..8].copy_from_slice(&self.key.to_le_bytes());
        bytes[8..].copy_from_slice(&runtime.0.to_le_bytes());
        (xxhash_rust::xxh3::xxh3_64(&bytes) & !0xff).max(0x100)
    }

    /// Perfetto uuid of host thread `thread`'s track (format 1.14).
    pub fn thread_uuid(&self, thread: u32) -> u64 {
        self.tagged_uuid(b't', thread)
    }

    /// Perfetto uuid of host thread `thread`'s `level`th track of crossing ranges (from 1).
    pub fn crossing_uuid(&self, thread: u32, level: u8) -> u64 {
        self.tagged_uuid(b'x', (u32::from(level) << 24) | (thread & 0xff_ffff))
    }

    /// Perfetto uuid of counter `name`'s track (format 1.14).
    pub fn counter_uuid(&self, name: AnnotationId) -> u64 {
        self.tagged_uuid(b'c', name.0)
    }

    /// xxh3-64 of `key`, a tag and `id`: 13 bytes, so never a runtime's (12), with its low
    /// 8 bits set to 0xff, so never a queue's either (their low byte is a slot + 1).
    fn tagged_uuid(&self, tag: u8, id: u32) -> u64 {
        let mut bytes = [0u8; 13];
        bytes[..8].copy_from_slice(&self.key.to_le_bytes());
        bytes[8] = tag;
        bytes[9..].copy_from_slice(&id.to_le_bytes());
        xxhash_rust::xxh3::xxh3_64(&bytes) | 0xff
    }
}

/// Chrome's `tid` of track `slot` of `runtime`: outside the range of real thread ids (below
/// 2^22 on Linux), distinct per runtime and queue.
pub(crate) fn chrome_tid(runtime: RuntimeId, slot: usize) -> u32 {
    0x4000_0000 | (runtime.0 & 0xff_ffff) << 4 | (slot as u32 + 1)
}

/// Chrome's `tid` (and Perfetto's) of host thread `thread`'s `level`th track of crossing
/// ranges (1 to 15): made up, apart from [`thread_tid`]'s and [`chrome_tid`]'s.
pub(crate) fn crossing_tid(thread: u32, level: u8) -> u32 {
    0x3000_0000 | (u32::from(level & 0xf) << 24) | (thread & 0xff_ffff)
}

/// Chrome's `tid` (and Perfetto's `ThreadDescriptor.tid`) of host thread `thread`: its OS
/// thread id where its `ThreadName` gave one, else one outside real thread ids and apart
/// from [`chrome_tid`]'s.
pub(crate) fn thread_tid(os_tid: Option<u64>, thread: u32) -> u32 {
    match os_tid.and_then(|t| u32::try_from(t).ok()) {
        Some(tid) => tid,
        None => 0x2000_0000 | (thread & 0xfff_ffff),
    }
}
