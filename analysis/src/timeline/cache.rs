//! The view cache: a trace's model built once, written to files, and reopened by mapping
//! them, so `hrx-trace view` of a large trace opens again without reading the trace.
//!
//! ```text
//! <cache dir>/<xxh3 of the trace's canonical path>/
//!     model.bin                 postcard: Manifest (format, the trace's identity, column
//!                               lengths, lanes), then the Model without its columns
//!     lane-N.spans lane-N.blocks   lane N's spans (40 B each) and level-of-detail blocks
//!     submissions region_spans explicit_producers explicit_edges explicit_by_consumer
//!     cross cross_by_producer submit_times  the per-submission tables, as stored in memory
//!     op_spans                  operation timings by region slot (40 B each)
//! ```
//!
//! A model reopened from the cache holds in memory only what grows with the program's
//! structure (graphs, regions, labels, events, statistics); every column that grows with
//! submissions or regions is a read-only map (`column`), paged in as frames touch
//! it. The first frame of a zoomed-out view reads the lanes' blocks, a binary search per
//! cell edge and the spans at cell edges.
//!
//! **Invalidation.** The manifest records the trace's length, modification time and the xxh3
//! of its first and last 64 KiB, the cache format and this crate's version; any difference
//! (or any error reading the cache) rebuilds it from the trace. An entry is written under a
//! temporary name and renamed into place, so a reader never sees half of one. The cache
//! directory is this user's (created mode 0700; one owned by another user, or writable by
//! others, or inside a directory that another user owns or may write without the sticky
//! bit, is not used, with a warning): its files are trusted as the process's own memory
//! would be, beyond their lengths, which are checked (a value of any other bytes decodes to
//! some span or submission, never to undefined behaviour: see `column::Plain`).
//!
//! **Eviction.** Each entry written leaves at most [`MAX_ENTRIES`] entries, of at most
//! [`MAX_BYTES`] together, the least recently used going first (a reopen marks its entry
//! used); the entry just written always stays. The temporary directories of writers that
//! died go as well. A process that still maps an
//! evicted entry keeps reading it (the files are unlinked, not truncated). Without this the
//! directory grew by one entry per large trace ever opened (a fresh-user pass found ten).

use super::column::{Column, Plain};
use super::lanes::Lane;
use super::model::Model;
use hrx_capture::ShowPath;
use hrx_capture::schema::{Queue, RuntimeId};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::UNIX_EPOCH;

/// Environment variable: `off` disables the cache; a directory puts it there.
pub const CACHE_ENV: &str = "HRX_VIEW_CACHE";

/// Environment variable: traces smaller than this many bytes, captured contents stored
/// apart not counted ([`is_large`]), are read directly (default [`DEFAULT_MIN_BYTES`]); `0`
/// caches every trace.
pub const CACHE_MIN_ENV: &str = "HRX_VIEW_CACHE_MIN_BYTES";

/// Traces below this size (about 700k regions) open in well under a second without it.
pub const DEFAULT_MIN_BYTES: u64 = 32 << 20;

/// Bumped whenever the layout of a column or the model changes. 2: `Recovery::clock` (the
/// host clock's calibrations); 3: `hrx-analysis` statistics; 4: `explicit_by_consumer`;
/// 5: the structure is the joiner's [`crate::Index`]; 6: its threads and annotation names,
/// and the model's host-thread rows (format 1.14); 7: the time range holds the threads'
/// markers, and capture-fence host spans (format 1.15); 8: `op_spans`, the operation
/// timings; 9: the statistics' `operations` and `op_times`; 10: the trace's fatal signal
/// and `Recovery::source_incomplete`; 11: a thread's crossing ranges on rows of their own
/// (`ThreadRow::level`); 12: the trace's ranges and host load (`TraceInfo`); 13: spans
/// that end before they start (`TraceInfo::ends_before_start`, a flag of a span's); 14:
/// `Recovery::newer_records`; 15: at most `EXPLICIT_PRODUCERS_KEPT` explicit producers of a
/// submission, the rest counted (`Submission::producers_left_out`,
/// `TraceInfo::explicit_producers_left_out`); 16: a producer named again is one producer
/// (`crate::scan::latest_producers`), never a place taken from another; 17: producers a
/// `Submit` parked for its graph did not hold (`TraceInfo::producers_not_parked`); 18:
/// regions running at the end that no lane draws (`TraceInfo::running_not_drawn`).
const FORMAT: u32 = 18;

/// The most entries eviction leaves (see the module docs).
pub const MAX_ENTRIES: usize = 8;

/// The most bytes eviction leaves, all entries together: four entries of 10M-region traces
/// (about 845 MB each).
pub const MAX_BYTES: u64 = 4 << 30;

/// Bytes hashed at each end of the trace for its identity.
const HASH_BYTES: u64 = 64 << 10;

/// Where and when the cache is used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheOptions {
    /// The cache directory; `None`: no cache.
    pub dir: Option<PathBuf>,
    /// Traces smaller than this, captured contents stored apart not counted ([`is_large`]),
    /// are not cached.
    pub min_bytes: u64,
}

impl CacheOptions {
    /// From [`CACHE_ENV`] and [`CACHE_MIN_ENV`]; by default `hrx-trace-view` in the
    /// temporary directory and [`DEFAULT_MIN_BYTES`] (also when [`CACHE_MIN_ENV`] is empty or
    /// blank; a number may be padded).
    ///
    /// # Errors
    ///
    /// The line naming [`CACHE_MIN_ENV`] when it is not a number of bytes: refused as every
    /// other bad variable is, not replaced by the default.
    pub fn from_env() -> Result<CacheOptions, String> {
        let dir = match std::env::var_os(CACHE_ENV) {
            Some(v) if v == "off" => None,
            Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
            _ => Some(std::env::temp_dir().join("hrx-trace-view")),
        };
        // Padding trimmed, as `HRX_SIM_MEMORY`'s: blanks alone are unset as empty is (" "
        // was refused while " 100 " was taken: a break-it pass).
        let min_bytes = match std::env::var_os(CACHE_MIN_ENV) {
            Some(v) if v.to_str().is_none_or(|t| !t.trim().is_empty()) => (v
                .to_str()
                .and_then(|v| v.trim().parse().ok()))
            .ok_or_else(|| format!("{CACHE_MIN_ENV}: expected a number of bytes, got {v:?}"))?,
            _ => DEFAULT_MIN_BYTES,
        };
        Ok(CacheOptions { dir, min_bytes })
    }
}

/// Whether the trace at `path` is large for `view`, `min_bytes` the threshold
/// ([`CacheOptions::min_bytes`]): cached, and shown as its summary frame while its index is
/// built. Its bytes are counted without the captured contents stored in blocks of their own
/// ([`hrx_capture::summary::Summaries::timeline_bytes`]), which the index never reads into
/// the timeline: the pipeline workload's 35 MiB trace of 48 regions, nearly all photos,
/// was large, its first frame a summary and an entry written under `/tmp` (a fresh user's
/// pass). Decided by the file's length alone where that is below `min_bytes` (no read),
/// and where the block headers cannot be read (the read then says why).
pub fn is_large(path: &Path, min_bytes: u64) -> bool {
    let Ok(len) = fs::metadata(path).map(|m| m.len()) else {
        return false;
    };
    if len < min_bytes {
        return false;
    }
    // Past the length: a hop from block header to block header, a few small reads each.
    min_bytes == 0
        || !matches!(hrx_capture::summary::read_summaries(path),
            Ok(s) if s.timeline_bytes() < min_bytes)
}

/// Which version of a trace a cached model was built from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceKey {
    len: u64,
    modified_ns: u128,
    head_hash: u64,
    tail_hash: u64,
}

impl TraceKey {
    /// The trace at `path` as it is now: length, modification time, and the xxh3 of its
    /// first and last 64 KiB.
    ///
    /// # Errors
    ///
    /// An I/O error when it cannot be opened or read.
    pub fn of(path: &Path) -> io::Result<TraceKey> {
        let mut file = File::open(path)?;
        let meta = file.metadata()?;
        let modified_ns = meta
            .modified()?
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut hash_at = |from: u64| -> io::Result<u64> {
            file.seek(SeekFrom::Start(from))?;
            let mut bytes = Vec::with_capacity(HASH_BYTES as usize);
            (&mut file).take(HASH_BYTES).read_to_end(&mut bytes)?;
            Ok(xxhash_rust::xxh3::xxh3_64(&bytes))
        };
        Ok(TraceKey {
            len: meta.len(),
            modified_ns,
            head_hash: hash_at(0)?,
            tail_hash: hash_at(meta.len().saturating_sub(HASH_BYTES))?,
        })
    }
}

/// Lengths of the model's columns, and its lanes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    format: u32,
    version: String,
    trace: TraceKey,
    /// (runtime, queue, spans, blocks) per lane.
    lanes: Vec<(RuntimeId, Queue, u64, u64)>,
    submissions: u64,
    region_spans: u64,
    explicit_producers: u64,
    explicit_edges: u64,
    explicit_by_consumer: u64,
    cross: u64,
    cross_by_producer: u64,
    submit_times: u64,
    op_spans: u64,
}

impl Manifest {
    /// The manifest of columns of these lengths (the trace's key is set when written).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        lanes: Vec<(RuntimeId, Queue, u64, u64)>,
        submissions: u64,
        region_spans: u64,
        explicit_producers: u64,
        explicit_edges: u64,
        explicit_by_consumer: u64,
        cross: u64,
        cross_by_producer: u64,
        submit_times: u64,
        op_spans: u64,
    ) -> Manifest {
        Manifest {
            format: FORMAT,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            trace: TraceKey {
                len: 0,
                modified_ns: 0,
                head_hash: 0,
                tail_hash: 0,
            },
            lanes,
            submissions,
            region_spans,
            explicit_producers,
            explicit_edges,
            explicit_by_consumer,
            cross,
            cross_by_producer,
            submit_times,
            op_spans,
        }
    }
}

fn invalid(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// The entry of the trace at `path` in `dir`.
fn entry(dir: &Path, path: &Path) -> io::Result<PathBuf> {
    let canonical = fs::canonicalize(path)?;
    let hash = xxhash_rust::xxh3::xxh3_64(canonical.as_os_str().as_encoded_bytes());
    Ok(dir.join(format!("{hash:016x}")))
}

/// The model of the trace at `path` from the cache in `dir`.
///
/// # Errors
///
/// An I/O error when there is no entry, it belongs to another version of the trace (or of
/// this program), or a file is missing or of the wrong length.
pub fn reopen(dir: &Path, path: &Path) -> io::Result<Model> {
    reopen_as(dir, path, &TraceKey::of(path)?)
}

/// [`reopen`], the entry current when its trace's key is `key` (the trace as it was when
/// an entry was just built from it, though it has grown since).
fn reopen_as(dir: &Path, path: &Path, key: &TraceKey) -> io::Result<Model> {
    check_private_dir(dir)?;
    let entry = entry(dir, path)?;
    let bytes = fs::read(entry.join("model.bin"))?;
    let (manifest, rest): (Manifest, &[u8]) =
        postcard::take_from_bytes(&bytes).map_err(|e| invalid(e.to_string()))?;
    if manifest.format != FORMAT || manifest.version != env!("CARGO_PKG_VERSION") {
        return Err(invalid("cache of another format"));
    }
    if manifest.trace != *key {
        return Err(invalid("the trace changed since it was cached"));
    }
    let mut model: Model = postcard::from_bytes(rest).map_err(|e| invalid(e.to_string()))?;
    map_columns(&entry, &manifest, &mut model)?;
    // Used now: eviction goes by the entry's modification time.
    let _ = File::open(entry.join("model.bin"))
        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
    Ok(model)
}

/// Maps the columns `manifest` lists, files of the entry `entry`, into `model`.
pub(super) fn map_columns(entry: &Path, manifest: &Manifest, model: &mut Model) -> io::Result<()> {
    model.lanes = Vec::with_capacity(manifest.lanes.len());
    for (i, &(runtime, queue, spans, blocks)) in manifest.lanes.iter().enumerate() {
        let spans = map_column(entry, &format!("lane-{i}.spans"), spans)?;
        let blocks = map_column(entry, &format!("lane-{i}.blocks"), blocks)?;
        model
            .lanes
            .push(Lane::mapped(runtime, queue, spans, blocks));
    }
    model.submissions = map_column(entry, "submissions", manifest.submissions)?;
    model.region_spans = map_column(entry, "region_spans", manifest.region_spans)?;
    model.explicit_producers =
        map_column(entry, "explicit_producers", manifest.explicit_producers)?;
    model.explicit_edges = map_column(entry, "explicit_edges", manifest.explicit_edges)?;
    model.explicit_by_consumer =
        map_column(entry, "explicit_by_consumer", manifest.explicit_by_consumer)?;
    model.cross = map_column(entry, "cross", manifest.cross)?;
    model.cross_by_producer = map_column(entry, "cross_by_producer", manifest.cross_by_producer)?;
    model.submit_times = map_column(entry, "submit_times", manifest.submit_times)?;
    model.op_spans = map_column(entry, "op_spans", manifest.op_spans)?;
    Ok(())
}

/// Opens the trace at `path` through the cache of `options`: reopens its entry when it is
/// current, else builds the model with `load`, writes the entry and reopens it mapped (so
/// the built model's memory is given back). A trace below `options.min_bytes` ([`is_large`]), or any
/// failure of the cache itself, leaves it to `load` alone.
///
/// # Errors
///
/// `load`'s.
pub fn open<E>(
    path: &Path,
    options: &CacheOptions,
    read_bytes: Option<&AtomicU64>,
    load: impl FnOnce() -> Result<Model, E>,
) -> Result<Model, E> {
    let Some(dir) = &options.dir else {
        return load();
    };
    if !is_large(path, options.min_bytes) {
        return load();
    }
    if let Err(error) = check_private_dir(dir)
        && error.kind() == io::ErrorKind::PermissionDenied
    {
        let _ = writeln!(io::stderr(), "warning: view cache not used: {error}");
        return load();
    }
    if let Ok(model) = reopen(dir, path) {
        return Ok(model);
    }
    // The key is taken before the read: a trace that grows meanwhile is cached as the
    // older version it was, and rebuilt on the next open. The entry just built is opened
    // by that key, not the trace's key now: a trace being recorded is shown as long as it
    // was when opened, as every reader reads it (a break-it pass: the entry of a growing
    // trace was refused as stale at once, and `load` read the grown trace again into
    // memory, minutes at "100%").
    let Ok(key) = TraceKey::of(path) else {
        return load();
    };
    // Streamed into the entry, nothing of the spans held; on any failure (an unreadable
    // trace included) `load` reads it again and says why.
    if write_with(dir, path, |temporary| {
        let (manifest, model) = super::stream::build(temporary, path, read_bytes)?;
        write_model(temporary, key.clone(), manifest, &model)
    })
    .is_ok()
        && let Ok(mapped) = reopen_as(dir, path, &key)
    {
        return Ok(mapped);
    }
    let model = load()?;
    match write(dir, path, &key, &model) {
        Ok(()) => {
            if let Ok(mapped) = reopen_as(dir, path, &key) {
                return Ok(mapped);
            }
        }
        // Read whole into memory instead, and again on every view: said (a full disk or a
        // file size limit left it silent, a view taking 18.6 s where a reopen takes 0.4 s;
        // a break-it pass at scale).
        Err(error) => unwritten().push((
            path.to_owned(),
            format!(
                "the view cache could not keep the index of {} in {} ({error}): it was built \
                 in memory, and is built again at every view ({})",
                path.shown(),
                dir.shown(),
                unwritten_hint(&error, dir)
            ),
        )),
    }
    Ok(model)
}

/// What to do about an entry that could not be written in `dir` for `error`: free space
/// only where space ran out (a missing folder read "free space there": a break-it pass).
fn unwritten_hint(error: &io::Error, dir: &Path) -> String {
    let elsewhere = format!("set {CACHE_ENV} to another folder");
    match error.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::FileTooLarge | io::ErrorKind::QuotaExceeded => {
            format!("free space there, or {elsewhere}")
        }
        // The cache directory is created, not the folders above it.
        io::ErrorKind::NotFound => match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) if !parent.is_dir() => {
                format!(
                    "{} does not exist: create it, or {elsewhere}",
                    parent.shown()
                )
            }
            _ => elsewhere,
        },
        _ => elsewhere,
    }
}

/// Why [`open`] could not write the entries of traces it opened: (trace, reason), until
/// [`take_unwritten`] takes them. Kept here, not printed, because `view` builds the index
/// while its terminal shows the summary frame: it says them once the terminal is its own.
static UNWRITTEN: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());

/// The reason [`open`] could not write the view cache's entry of the trace at `path`, if
/// it could not (once: taken).
pub fn take_unwritten(path: &Path) -> Option<String> {
    let mut unwritten = unwritten();
    let at = unwritten.iter().position(|(p, _)| p == path)?;
    Some(unwritten.swap_remove(at).1)
}

/// [`UNWRITTEN`], even after a panic while it was held (it holds only messages).
fn unwritten() -> std::sync::MutexGuard<'static, Vec<(PathBuf, String)>> {
    UNWRITTEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether the cache directory of `options` may be used: `Err` (after the warning
/// [`open`] prints) when another user owns it or others may write it.
///
/// # Errors
///
/// The reason, as [`open`] words it.
pub fn usable(options: &CacheOptions) -> Result<(), String> {
    if let Some(dir) = &options.dir
        && let Err(error) = check_private_dir(dir)
        && error.kind() == io::ErrorKind::PermissionDenied
    {
        return Err(format!("view cache not used: {error}"));
    }
    Ok(())
}

fn map_column<T: Plain>(entry: &Path, name: &str, len: u64) -> io::Result<Column<T>> {
    let file = File::open(entry.join(name))?;
    let len = usize::try_from(len).map_err(|_| invalid("column too long"))?;
    // SAFETY: cache files are written once under a temporary name, renamed into place and
    // never written again (a rebuild writes a new entry and renames it over).
    unsafe { Column::map(&file, len) }
}

/// Writes `model`, built from the trace at `path` when it was `key`, into the cache in
/// `dir`, replacing an older entry.
///
/// # Errors
///
/// An I/O error when the directory or a file cannot be written.
pub fn write(dir: &Path, path: &Path, key: &TraceKey, model: &Model) -> io::Result<()> {
    write_with(dir, path, |temporary| write_entry(temporary, key, model))
}

/// Writes the entry of the trace at `path` in `dir` with `write_entry`, into a temporary
/// directory renamed into place when it succeeds.
fn write_with(
    dir: &Path,
    path: &Path,
    write_entry: impl FnOnce(&Path) -> io::Result<()>,
) -> io::Result<()> {
    create_private_dir(dir)?;
    let entry = entry(dir, path)?;
    let temporary = entry.with_extension(format!("tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&temporary);
    fs::create_dir(&temporary)?;
    let written = write_entry(&temporary);
    if let Err(error) = written {
        let _ = fs::remove_dir_all(&temporary);
        return Err(error);
    }
    // A directory cannot be renamed over a non-empty one: the old entry goes first (a
    // reader in between finds none and reads the trace).
    let _ = fs::remove_dir_all(&entry);
    fs::rename(&temporary, &entry).inspect_err(|_| {
        let _ = fs::remove_dir_all(&temporary);
    })?;
    evict(dir, &entry, MAX_ENTRIES, MAX_BYTES);
    Ok(())
}

/// The bytes of the files of the entry `path` (0 where it cannot be read).
fn entry_bytes(path: &Path) -> u64 {
    fs::read_dir(path)
        .map(|files| {
            (files.flatten())
                .filter_map(|f| f.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Removes from `dir` what eviction removes (see the module docs), keeping `keep`: the
/// temporary directories of writers no longer running, then the least recently used entries
/// past `max_entries` or `max_bytes`. Best effort: what cannot be read or removed stays.
fn evict(dir: &Path, keep: &Path, max_entries: usize, max_bytes: u64) {
    let Ok(read) = fs::read_dir(dir) else {
        return;
    };
    let mut entries = Vec::new();
    for item in read.flatten() {
        let path = item.path();
        let name = item.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some((_, pid)) = name.split_once(".tmp-") {
            // Another writer's, while it runs.
            let alive = pid
                .parse::<u32>()
                .is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
            if !alive {
                let _ = fs::remove_dir_all(&path);
            }
            continue;
        }
        if name.len() != 16 || !name.bytes().all(|b| b.is_ascii_hexdigit()) || path == keep {
            continue;
        }
        let used = fs::metadata(path.join("model.bin"))
            .and_then(|m| m.modified())
            .unwrap_or(UNIX_EPOCH);
        entries.push((used, entry_bytes(&path), path));
    }
    let kept_bytes = entry_bytes(keep);
    // Most recently used first: the others are kept while they fit.
    entries.sort_by_key(|e| std::cmp::Reverse(e.0));
    let (mut count, mut total) = (1, kept_bytes);
    for (_, bytes, path) in entries {
        if count < max_entries && total + bytes <= max_bytes {
            count += 1;
            total += bytes;
        } else {
            let _ = fs::remove_dir_all(&path);
        }
    }
}

/// Creates the cache directory itself, not its parents: a `TMPDIR` that does not exist is
/// no place to create (a break-it pass found `/nonexistent/tmp` made at the root, 177 MB
/// written there); the trace is then read without a cache.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    check_private_dir(dir)
}

/// Refuses a cache directory that another user owns or that others may write: its files
/// are mapped and trusted as this process's memory, so anyone who can plant an entry there
/// (a shared `/tmp/hrx-trace-view` created first by another user) could feed the timeline.
///
/// # Errors
///
/// [`io::ErrorKind::PermissionDenied`] naming the directory, owner and mode; an I/O error
/// when it cannot be inspected (absent: [`io::ErrorKind::NotFound`]).
fn check_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::symlink_metadata(dir)?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o022 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not a private directory of this user (owner uid {}, mode {:o}); \
                     set {CACHE_ENV} to another directory, or to off",
                    dir.shown(),
                    meta.uid(),
                    meta.mode() & 0o7777
                ),
            ));
        }
        // And every directory above it: one that another user owns, or that others may
        // write without the sticky bit (as /tmp has), lets them rename this one away and
        // put their own in its place.
        for parent in fs::canonicalize(dir)?.ancestors().skip(1) {
            let meta = fs::metadata(parent)?;
            let sticky = meta.mode() & 0o1000 != 0;
            if (meta.uid() != me && meta.uid() != 0) || (meta.mode() & 0o022 != 0 && !sticky) {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "{} is in {}, which another user may change (owner uid {}, mode \
                         {:o}); set {CACHE_ENV} to another directory, or to off",
                        dir.shown(),
                        parent.shown(),
                        meta.uid(),
                        meta.mode() & 0o7777
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn write_entry(temporary: &Path, key: &TraceKey, model: &Model) -> io::Result<()> {
    let column =
        |name: &str, write: &dyn Fn(&mut BufWriter<File>) -> io::Result<()>| -> io::Result<()> {
            let mut out = BufWriter::with_capacity(1 << 20, File::create(temporary.join(name))?);
            // Synced so that its pages can be dropped from the page cache now and read back
            // page by page when mapped (see `column::drop_cached_pages`).
            write(&mut out)?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_data()?;
            super::column::drop_cached_pages(&file);
            Ok(())
        };
    let mut lanes = Vec::with_capacity(model.lanes.len());
    for (i, lane) in model.lanes.iter().enumerate() {
        let (spans, blocks) = lane.columns();
        column(&format!("lane-{i}.spans"), &|out| spans.write_to(out))?;
        column(&format!("lane-{i}.blocks"), &|out| blocks.write_to(out))?;
        lanes.push((
            lane.runtime,
            lane.queue,
            spans.len() as u64,
            blocks.len() as u64,
        ));
    }
    column("submissions", &|out| model.submissions.write_to(out))?;
    column("region_spans", &|out| model.region_spans.write_to(out))?;
    column("explicit_producers", &|out| {
        model.explicit_producers.write_to(out)
    })?;
    column("explicit_edges", &|out| model.explicit_edges.write_to(out))?;
    column("explicit_by_consumer", &|out| {
        model.explicit_by_consumer.write_to(out)
    })?;
    column("cross", &|out| model.cross.write_to(out))?;
    column("cross_by_producer", &|out| {
        model.cross_by_producer.write_to(out)
    })?;
    column("submit_times", &|out| model.submit_times.write_to(out))?;
    column("op_spans", &|out| model.op_spans.write_to(out))?;
    let manifest = Manifest::new(
        lanes,
        model.submissions.len() as u64,
        model.region_spans.len() as u64,
        model.explicit_producers.len() as u64,
        model.explicit_edges.len() as u64,
        model.explicit_by_consumer.len() as u64,
        model.cross.len() as u64,
        model.cross_by_producer.len() as u64,
        model.submit_times.len() as u64,
        model.op_spans.len() as u64,
    );
    write_model(temporary, key.clone(), manifest, model)
}

/// Writes `model.bin`: the manifest (with the trace's key), then the model without its
/// columns.
fn write_model(
    temporary: &Path,
    key: TraceKey,
    mut manifest: Manifest,
    model: &Model,
) -> io::Result<()> {
    manifest.trace = key;
    let mut bytes = postcard::to_stdvec(&manifest).map_err(|e| invalid(e.to_string()))?;
    bytes.extend(postcard::to_stdvec(model).map_err(|e| invalid(e.to_string()))?);
    let mut out = BufWriter::new(File::create(temporary.join("model.bin"))?);
    out.write_all(&bytes)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_data()?;
    super::column::drop_cached_pages(&file);
    Ok(())
}

#[cfg(test)]
mod tests;
