//! The command line, declared with clap derive. Parsing only: every verb's behaviour lives
//! in its own module.

use clap::{ArgGroup, Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// Record, inspect and replay traces of the hrx GPU/NPU runtime.
///
/// Exit codes: 0 success; 1 a regression (replay, diff); 2 unusable input, a usage error or a
/// failure to do what was asked. `record -- PROGRAM` exits with the program's code.
#[derive(Debug, Parser)]
#[command(name = "hrx-trace", version = version(), propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,

    /// Print results, warnings and errors only: no progress bars, no notes (and no summary
    /// from `record`, `trim` or `export`). Warnings about what a trace lacks are never
    /// silenced.
    #[arg(short, long, global = true, conflicts_with = "verbose", help_heading = GLOBAL)]
    pub quiet: bool,

    /// Say more on standard error: what each reading read, and how long it took.
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    pub verbose: bool,

    /// Colour verdicts and the error, warning and note prefixes: auto (on a terminal,
    /// unless NO_COLOR is set and not empty), always or never.
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "WHEN", value_enum, default_value_t = crate::output::ColorChoice::Auto)]
    pub color: crate::output::ColorChoice,
}

/// The `--help` heading of the options every verb takes (`-q`, `-v`, `--color`), apart from
/// the verb's own.
const GLOBAL: &str = "Global options";

/// `--version`: the release, the trace format it writes and the backends built in.
fn version() -> &'static str {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{} (trace format {}; GPU backends: {}; NPU backends: {})",
            env!("CARGO_PKG_VERSION"),
            hrx_capture::format::FormatVersion::CURRENT,
            hrx::GPU_BACKENDS.join(", "),
            hrx::NPU_BACKENDS.join(", ")
        )
    });
    &TEXT
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record a trace of a program that uses hrx, or of a built-in workload.
    Record(RecordArgs),
    /// Describe a trace: header, session, record counts, time span, recovery.
    Info(InfoArgs),
    /// Print every record of a trace, one per line (or as JSON lines).
    Dump(DumpArgs),
    /// Re-execute a trace's pipelines and compare outputs and timings (exit 0 match, 1
    /// regression, 2 not replayable).
    Replay(ReplayArgs),
    /// Interactive timeline of a trace: lanes, hazards, failures, statistics.
    #[command(visible_alias = "tui")]
    View(ViewArgs),
    /// Export a trace: Perfetto or Chrome JSON for a timeline UI, Parquet tables for SQL.
    Export(ExportArgs),
    /// Per-kernel durations, queue utilisation, copy bandwidth, submissions and failures.
    Stats(StatsArgs),
    /// Compare two traces: kernel times with their spread, new and missing kernels, output
    /// digests (exit 0 same or different, 1 regression, 2 unusable input).
    Diff(DiffArgs),
    /// Cut a trace down to a range of submissions (or a time window) that still replays:
    /// the buffer contents the range reads before writing come from the full trace.
    Trim(TrimArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Print the man page (roff), or write one page per verb into a directory.
    Man(ManArgs),
}

/// `hrx-trace replay`.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: 0 every output and status matches (and no region is slower than
--max-slowdown); 1 a regression: an output digest differs, a submission failed where the
capture succeeded or the reverse, or a region slowed past --max-slowdown; 2 the trace cannot
be replayed here (and why).

Examples:
  hrx-trace replay pipeline.hrxt
  hrx-trace replay --backend cuda --max-slowdown 1.2 pipeline.hrxt
  hrx-trace replay --save-baseline good.json pipeline.hrxt   (on a known-good build)
  hrx-trace replay --add-to-baseline good.json pipeline.hrxt (3-5 times: runs apart)
  hrx-trace replay --baseline good.json pipeline.hrxt        (after each build)
  hrx-trace replay --report json pipeline.hrxt > report.json")]
pub struct ReplayArgs {
    /// The trace file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Backend to replay on: auto, sim or cuda (built-in kernels exist on both); hip in a
    /// build with the `hip` feature [default: auto, as `record`: CUDA, then HIP, then the
    /// software device; honours HRX_BACKEND]. The report's first lines say which it
    /// replayed on, and when that is not the recorded backend, that timings are not
    /// comparable (no ratios; --max-slowdown is refused).
    #[arg(long, value_name = "B")]
    pub backend: Option<String>,

    /// Replays to time; timings are medians over them [default: 1; with --max-slowdown,
    /// --baseline, --save-baseline or --add-to-baseline 10,
    /// so that a region run at least twice in the trace has 7 or more samples in each half of
    /// the repeats (the replay's own run-to-run change) and one run once has 10 (its
    /// median's interval)].
    #[arg(long, value_name = "N", value_parser = parse_repeat, allow_negative_numbers = true)]
    pub repeat: Option<usize>,

    /// Save this replay's timings (each region's and operation's replayed distribution) as a
    /// baseline, to judge later replays of the same recording against (`--baseline`); a file
    /// that exists must be a baseline (a trace is never overwritten).
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,

    /// Add this replay's timings to a baseline as one more run (a file not there yet, or
    /// empty, becomes a baseline of one run): replays of a known-good build, each its own
    /// process, added to one baseline say how far a replay moves from one process to the
    /// next (copies move most), which `--baseline` then takes as a floor a slowdown must
    /// pass, against the baseline and the capture alike. 3 to 5 runs make a gate's baseline.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["save_baseline", "inject_slowdown"])]
    pub add_to_baseline: Option<PathBuf>,

    /// Judge the timings against a baseline `--save-baseline` wrote on a known-good build, by
    /// the same rule and `--max-slowdown` (default 1.5 with a baseline), as well as against
    /// the capture; a regression against either is exit 1.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// How fast submissions are replayed: `none`, as fast as the runtime takes them (its
    /// slots and ordering kept), or `captured`, each no earlier after the first than it was
    /// captured after the first (a program that paced its frames replays as it ran).
    #[arg(long, value_name = "PACE", default_value = "none", value_parser = ["none", "captured"])]
    pub pace: String,

    /// Replays run and thrown away before the measured ones (first launches, kernel
    /// compilation, clocks and caches warmed up); a streamed replay warms up on its first
    /// chunk of submissions.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_warmup, allow_negative_numbers = true)]
    pub warmup: usize,

    /// A test of a timing gate: replay kernel ENTRY about PERCENT% slower, as if it did that
    /// much more work (each block of hrx's built-in kernels on CUDA, the host code on the
    /// software device, stays that share of its own time longer; outputs unchanged), e.g.
    /// `--inject-slowdown hrx_blur_h=15 --max-slowdown 1.1`. The report says it; repeatable;
    /// not with --save-baseline. On CUDA not in proportion for every kernel: read the slowed
    /// kernel's own row (`--per-op`) for what it did.
    #[arg(long, value_name = "ENTRY=PERCENT", value_parser = parse_slowdown, conflicts_with = "save_baseline")]
    pub inject_slowdown: Vec<(String, u32)>,

    /// Also report each operation's time inside its native graph or copy batch, timed in the
    /// replays as the capture was (the software device always; CUDA: hrx's built-in kernels
    /// time themselves, and CUPTI's kernel times where the capture timed copies or fills).
    #[arg(long)]
    pub per_op: bool,

    /// Implies --per-op: launch and time each operation on its own instead of inside its
    /// graph, one graph per operation, at least 3 times (or --repeat), timed as its region
    /// (on a GPU with a whole launch's overhead inside each time).
    #[arg(long)]
    pub isolated: bool,

    /// Compare float outputs within this relative tolerance (needs captured contents:
    /// record with HRX_TRACE_CONTENTS=1); exact digests otherwise.
    // Negative numbers parse, so that the value check names what is wrong with them (clap
    // would call `-1` an unexpected argument).
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub tolerance: Option<f64>,

    /// A region or operation is a regression when the 95% confidence interval of the ratio
    /// of its replayed median over its captured one lies wholly past this factor and past
    /// the replay's own run-to-run change (between the halves of its repeats' medians), and
    /// the medians differ by more than the floor: 100 µs on host time (shorter differences
    /// are scheduling noise), 0.5 µs on device time (the GPU timers' resolution): the timing
    /// rule `diff` applies to kernels; a row past this factor that a rule cleared says which
    /// (`not slow: ...`). A row with fewer than 7 samples on a side is not judged and said
    /// so [default: off, timings are reported but not judged: a replay often runs on another
    /// device or backend than the capture; 1.5 with --baseline]. --repeat defaults to 10
    /// with it.
    #[arg(long, value_name = "R", value_parser = parse_ratio, allow_negative_numbers = true)]
    pub max_slowdown: Option<f64>,

    /// Replay only submissions 1 to N of each runtime (N >= 1), numbered as in the whole
    /// recording, as a range or trim keeps them (one holding 4..=7 replays 4 and 5 with
    /// --until 5); an N before the trace's first submission is an error, one past its last
    /// replays them all, with a warning.
    #[arg(long, value_name = "N", value_parser = parse_until, allow_negative_numbers = true)]
    pub until: Option<u64>,

    /// Report format. JSON: `warnings` what standard error warned, each line; `complete`
    /// and `lost` (`total`, `lossy`) as the other verbs' JSON says them.
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub report: String,
}

/// `hrx-trace view`.
#[derive(Debug, Args)]
#[command(after_help = "\
Keys: arrows select and change queue, +/- zoom, f fit, z zoom to the selection, Tab next
span, h hazards of the selection, p jump to its producer, n/N next/previous event,
e events list, s statistics, / search (labels and the kernels inside), PgUp/PgDn scroll
the details, F follow the newest time (--follow), ? every key, q quit. The mouse wheel
zooms and a click selects.")]
pub struct ViewArgs {
    /// The trace file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Follow a trace that is still being written: new blocks appear as the recorder
    /// flushes them, and the window follows the newest time until you pan or zoom (F
    /// follows again).
    #[arg(long)]
    pub follow: bool,
}

/// `hrx-trace record`.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("what").required(true).args(["workload", "program"])),
    after_help = "\
Examples:
  hrx-trace record -- ./my-app --input frames/
  hrx-trace record -o run.hrxt -- cargo run --release -p hrx --example pipeline -- --frames 2
  hrx-trace record --workload pipeline --input photos/ --frames 20
  hrx-trace record --workload faults --fault op=9:device-lost

With `-- PROGRAM`, the program runs with HRX_TRACE=FILE in its environment: every hrx
runtime it creates records into FILE. hrx-trace waits for it, exits with its exit code
(128+N when it is killed by signal N) and prints a summary of the trace."
)]
// The workload options conflict with PROGRAM rather than `requires = "workload"`: clap lets
// any member of a required group satisfy `requires` (clap-rs/clap#4707).
pub struct RecordArgs {
    /// Trace file to write (an earlier trace there is overwritten). `%p` becomes the process
    /// id, `%h` the host name, `%n` the first free sequence number, `%%` a `%`. Without `%p`
    /// or `%n`, each further process of PROGRAM that uses hrx writes NAME.PID.EXT beside it
    /// (it says so on standard error); every file written is listed.
    #[arg(short, long, value_name = "FILE", default_value = "hrx.hrxt")]
    pub output: PathBuf,

    /// Run a built-in workload in this process instead of a program: `pipeline` (edge
    /// detection over photographs), `hazards` (overlapping byte ranges across submissions)
    /// or `faults` (the pipeline with a device loss injected mid-run).
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,

    /// Photographs for `pipeline` and `faults`: a JPEG/PNG file or a directory of them
    /// [default: /usr/share/backgrounds/mate/nature when present, else a built-in photo].
    #[arg(long, value_name = "PATH", conflicts_with = "program")]
    pub input: Option<PathBuf>,

    /// Frames to run (`pipeline`, `faults`), cycling through the photographs [default: each
    /// photograph once; `faults`: at least 4].
    #[arg(long, value_name = "N", conflicts_with = "program", value_parser = parse_frames, allow_negative_numbers = true)]
    pub frames: Option<usize>,

    /// Largest frame width in pixels (`pipeline`, `faults`): the first photograph is scaled
    /// down to it (aspect kept) and every other one scaled and centre-cropped to that size
    /// [default: 1280].
    #[arg(
        long,
        value_name = "PX",
        conflicts_with = "program",
        value_parser = parse_width,
        allow_negative_numbers = true
    )]
    pub max_width: Option<u32>,

    /// Frames in flight in the pipeline, 1 to the runtime's 64 submission slots [default: 3].
    #[arg(long, value_name = "N", conflicts_with = "program", value_parser = parse_count, allow_negative_numbers = true)]
    pub in_flight: Option<usize>,

    /// Backend: auto, sim, cuda or hip [default: auto, which honours HRX_BACKEND].
    #[arg(long, value_name = "B", conflicts_with = "program")]
    pub backend: Option<String>,

    /// Fault to inject on the software device, e.g. `op=7:device-lost` or
    /// `kernel=hrx_sobel#2:kernel-error` [`faults` default: kernel=hrx_sobel#2:device-lost].
    #[arg(long, value_name = "SPEC", conflicts_with = "program")]
    pub fault: Option<String>,

    /// Record only some submissions: `submissions:A..B` (the runtime numbers them from 1;
    /// B excluded, A..=B includes it, A.. to the end), `time:S..E` (submitted S to E after
    /// the trace session starts: 1.5s..3s) or `api` (from the program's
    /// `hrx::trace::start()` to its `stop()`; a program's only). Buffers, kernels and
    /// graphs are always recorded, and, just before each submission of the range, the
    /// bytes it reads that the range has not written yet (a state snapshot), so the trace
    /// replays on its own.
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["delay", "duration"])]
    pub capture_range: Option<String>,

    /// Time every operation of a native graph or copy batch on the device (HRX_TRACE_KERNELS=1):
    /// on CUDA through CUPTI (libcupti, found in CUDA_HOME or HRX_CUPTI_PATH), at a cost per
    /// launch. Without it hrx's built-in kernels time themselves (on CUDA, two timer reads a
    /// block); the software device times every operation of a traced run anyway. Either flag
    /// wins over HRX_TRACE_KERNELS.
    #[arg(long, conflicts_with = "no_kernel_times")]
    pub kernel_times: bool,

    /// Regions only on CUDA (HRX_TRACE_KERNELS=0): launch the plain builds of hrx's built-in
    /// kernels, which do not time themselves (the software device still times its operations,
    /// one clock reading between two).
    #[arg(long)]
    pub no_kernel_times: bool,

    /// Record the submissions submitted from S seconds after the trace session starts (the
    /// first hrx runtime's creation): `time:S..` (with --duration, `time:S..S+D`).
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub delay: Option<String>,

    /// Record the submissions submitted during D seconds (from --delay, else from the
    /// session's start).
    #[arg(long, value_name = "D", allow_hyphen_values = true)]
    pub duration: Option<String>,

    /// Print the summary as JSON, one object a line per trace written (`info --json`'s
    /// object under `trace`, with the workload's outcome or the program's exit code).
    #[arg(long)]
    pub json: bool,

    /// The program to record and its arguments (after `--`).
    #[arg(last = true, value_name = "PROGRAM [ARGS]...")]
    pub program: Vec<OsString>,
}

/// `hrx-trace info`.
#[derive(Debug, Args)]
#[command(after_help = "\
A trace that was not closed cleanly (the recording process crashed or was killed) is still
described from every complete block, with what was lost listed as warnings.")]
pub struct InfoArgs {
    /// The trace file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The same as one JSON object (with `schema_version`; times in ns, digests as hex
    /// strings) instead of text: `complete` (read whole, nothing lost), `lost` (`total`,
    /// `lossy`) and `warnings` as the other verbs' JSON says them.
    #[arg(long)]
    pub json: bool,
}

/// `hrx-trace dump`.
#[derive(Debug, Args)]
#[command(after_help = "\
Records are streamed in file order. The text form starts each line with the record's host
time (ms since the session start) where it has one. Warnings about damaged or missing parts
go to standard error.")]
pub struct DumpArgs {
    /// The trace file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// One JSON object per line (the record's serde form) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `hrx-trace export`.
#[derive(Debug, Args)]
#[command(after_help = "\
One track per queue of each runtime (and an Events track for failures, quarantine, poison,
cancellations and refused submits, the events view lists; a Recorder track for output digests,
capture fences, recorder waits, lost records and a fatal signal); one slice per timed region (and per timed operation
inside it, where the trace has operation timings), with the region's buffer ranges and
hazards as arguments; flows for the dependencies between regions of a graph and for the
waits on earlier submissions.

Timestamps are absolute: CLOCK_MONOTONIC of the recording host (ns; µs in Chrome JSON),
with the traced process's real pid, command line and host name. Several traces give one
timeline: each process its own tracks, traces of one host lined up by CLOCK_MONOTONIC,
traces of several hosts by the wall clock (export says which). A trace whose session
record was lost (its first block damaged) is exported alone, its times put on
CLOCK_MONOTONIC from its clock calibrations, its host, pid, command line and wall clock
said to be unknown; merging it with another trace is refused (which recording it is, and
where it lines up, cannot be told).

The format comes from --format, or else from OUT: .json is chrome; .pftrace,
.perfetto-trace, .perfetto and .pb are perfetto; an existing directory, a path ending in /
or in .parquet is parquet (a directory of Parquet tables); any other name needs --format.

Each trace is read once, streamed in bounded memory; a progress bar shows on a terminal.
`-o -` writes the export to standard output (with --format chrome or perfetto).
Open the output at https://ui.perfetto.dev (both formats) or chrome://tracing (chrome).

Examples:
  hrx-trace export pipeline.hrxt -o pipeline.pftrace
  hrx-trace export pipeline.hrxt -o pipeline.json
  hrx-trace export app-*.hrxt -o merged.pftrace
  hrx-trace export pipeline.hrxt --format parquet -o tables/")]
pub struct ExportArgs {
    /// The trace files: several give one merged timeline (Parquet: one table set holding every session).
    #[arg(value_name = "FILE", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,

    /// Output format: `chrome` (trace-event JSON), `perfetto` (protobuf TracePacket stream)
    /// or `parquet` (a directory of Parquet tables) [default: from OUT's extension].
    #[arg(long, value_name = "FORMAT", value_parser = ["chrome", "perfetto", "parquet"])]
    pub format: Option<String>,

    /// Output file (a directory for parquet): created, or replaced if it is an earlier
    /// export in the same format (nothing else is overwritten; a failed or interrupted
    /// export leaves the earlier one as it was); `-` for standard output.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
}

/// `hrx-trace trim`.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("range").required(true).args(["submissions", "time"])),
    after_help = "\
The trimmed trace keeps every definition (buffers, kernels, graphs), the submissions of the
range with everything that names them, the host writes replay places inside the range, and
a snapshot of every buffer byte the range reads before it writes it, taken from the full
trace (host writes, and output contents when recorded with HRX_TRACE_CONTENTS=1). Bytes whose
contents the full trace lacks are named on one warning line; the trace is then written but
replays as not exact.

Examples:
  hrx-trace trim pipeline.hrxt -o frames-4-6.hrxt --submissions 4..7
  hrx-trace trim pipeline.hrxt -o late.hrxt --time 1.5s..3s"
)]
pub struct TrimArgs {
    /// The trace to trim.
    #[arg(value_name = "IN")]
    pub file: PathBuf,

    /// The trimmed trace to write (an earlier trace there is replaced; never IN).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,

    /// Submissions A..B of each runtime (B excluded; A..=B includes it; A.. to the end), by
    /// their numbers in the trace (`dump`, `replay` show them).
    // Hyphen values parse, so that `-2..4` gets the range's own message.
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    pub submissions: Option<String>,

    /// The submissions submitted in S..E after the session start: seconds, or with s, ms, us
    /// or ns (1.5s..3s, 200ms..).
    #[arg(long, value_name = "S..E", allow_hyphen_values = true)]
    pub time: Option<String>,
}

/// `hrx-trace stats`.
#[derive(Debug, Args)]
#[command(after_help = "\
Kernels are region labels, as in the timeline: a native graph of several operations counts
under its first kernel and the count of the others, `hrx_rgb_to_gray +5`. Durations are
host times of regions that ran; percentiles use the nearest-rank method. Utilisation is the
union of a queue's busy intervals over the trace span; bandwidth is copied bytes over
copy-batch time.")]
pub struct StatsArgs {
    /// The trace file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// One JSON object instead of text (times in ns, bandwidth in bytes/s): `operations` the
    /// kernel table, `regions` the region table (`kernels` is a deprecated copy of
    /// `regions`, kept for older scripts); `complete`, `lost` (`total`, `lossy`) and
    /// `warnings` as the other verbs' JSON says them.
    #[arg(long)]
    pub json: bool,

    /// Follow a trace that is still being written: the summary again each second until
    /// the trace is closed (then the final report), or Ctrl-C.
    #[arg(long)]
    pub follow: bool,
}

/// `hrx-trace diff`.
#[derive(Debug, Args)]
#[command(after_help = "\
Kernels are matched by label, regions by (runtime, prepared graph, region index; by label in a
graph whose labels changed), outputs by (runtime, submission, the graph operation and use that
write them, byte range), never by buffer id, which depends on how a run allocated. A kernel is
SLOW by the rule under
--max-slowdown: the 95% interval of its median ratio lies wholly past R and it grew by more
than 50 us. Exit codes: 0 no regression; 1 a slow kernel, an output
digest that differs or a submission whose outcome changed (succeeded in one, failed or
cancelled in the other); 2 unusable input. New and missing kernels, regions and outputs are
reported but are not regressions.

Examples:
  hrx-trace diff base.hrxt new.hrxt
  hrx-trace diff --max-slowdown 1.2 --json base.hrxt new.hrxt > diff.json")]
pub struct DiffArgs {
    /// The reference trace.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,

    /// The trace to compare with it.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,

    /// A kernel is a regression when the 95% confidence interval of the ratio of its new
    /// median over its base one lies wholly past this factor and it grew by more than 50 µs
    /// (7 runs a side at least; fewer are not judged).
    #[arg(
        long,
        value_name = "R",
        default_value_t = 1.5,
        value_parser = parse_ratio,
        allow_negative_numbers = true
    )]
    pub max_slowdown: f64,

    /// One JSON object instead of text (times in ns): `reasons` say what decided the
    /// verdict, `warnings` what standard error warned of either trace; `complete` and
    /// `lost` (`total`, `lossy`) of each, `base` and `new`.
    #[arg(long)]
    pub json: bool,
}

/// `hrx-trace completions`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  hrx-trace completions bash > /etc/bash_completion.d/hrx-trace
  hrx-trace completions zsh > \"${fpath[1]}/_hrx-trace\"
  hrx-trace completions fish > ~/.config/fish/completions/hrx-trace.fish")]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `hrx-trace man`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  hrx-trace man | man -l -
  hrx-trace man --dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write hrx-trace.1 and hrx-trace-VERB.1 for every verb into this directory (created
    /// if missing) instead of printing hrx-trace.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// A count given on the command line: negative numbers parse as far as here (clap would
/// call `-1` an unexpected argument and suggest `-- -1`), to be refused with the reason.
fn parse_count(text: &str) -> Result<usize, String> {
    text.parse::<usize>().map_err(|e| whole_number(text, &e))
}

/// `--frames`: a count of at least 1.
fn parse_frames(text: &str) -> Result<usize, String> {
    match parse_count(text) {
        Ok(0) => Err("a run has at least one frame: give 1 or more".to_owned()),
        Ok(n) => Ok(n),
        Err(_) if text.trim_start().starts_with('-') => {
            Err("it must not be negative: give a whole number, 1 or more".to_owned())
        }
        Err(e) => Err(e),
    }
}

/// `--repeat`: a count of at least 1 (the upper bound is checked with the other values).
fn parse_repeat(text: &str) -> Result<usize, String> {
    if text.trim_start().starts_with('-') {
        return Err("it must be a whole number of at least 1".to_owned());
    }
    parse_count(text)
}

/// A time ratio as reports write one (`1.5x`) or as a number (`1.5`); its range is checked
/// where it is used.
fn parse_ratio(text: &str) -> Result<f64, String> {
    let number = text.trim();
    let number = number.strip_suffix(['x', 'X']).unwrap_or(number);
    number
        .parse::<f64>()
        .map_err(|_| format!("{text:?}: expected a ratio such as 1.2 or 1.2x"))
}

/// `--inject-slowdown`: `ENTRY=PERCENT`, a kernel entry and 1 to 1000 (percent).
fn parse_slowdown(text: &str) -> Result<(String, u32), String> {
    let (entry, percent) = text
        .split_once('=')
        .ok_or_else(|| format!("expected ENTRY=PERCENT (e.g. hrx_blur_h=15), got {text:?}"))?;
    let entry = entry.trim();
    if entry.is_empty() {
        return Err(format!("no kernel entry before '=' in {text:?}"));
    }
    let percent = percent.trim();
    let percent = percent.strip_suffix('%').unwrap_or(percent);
    match percent.parse::<u32>() {
        Ok(p @ 1..=1000) => Ok((entry.to_owned(), p)),
        _ => Err(format!(
            "{percent:?}: the slowdown must be a whole percent from 1 to 1000"
        )),
    }
}

/// `--warmup`: a count (see [`parse_count`]) of at most 10, each a whole replay.
fn parse_warmup(text: &str) -> Result<usize, String> {
    match parse_count(text)? {
        n @ 0..=10 => Ok(n),
        n => Err(format!("{n} warm-up replays: give 0 to 10")),
    }
}

/// A width in pixels (see [`parse_count`]).
fn parse_width(text: &str) -> Result<u32, String> {
    text.parse::<u32>().map_err(|e| whole_number(text, &e))
}

fn whole_number(text: &str, error: &std::num::ParseIntError) -> String {
    if text.trim_start().starts_with('-') {
        "it must not be negative: give a whole number, 0 or more".to_owned()
    } else {
        format!("{error}: give a whole number")
    }
}

/// `--until N`: a submission number, which the runtime numbers from 1.
fn parse_until(text: &str) -> Result<u64, String> {
    if text.trim_start().starts_with('-') {
        return Err("submissions count from 1: give 1 or more".to_owned());
    }
    match text.parse::<u64>() {
        Ok(0) => Err("submissions count from 1: give 1 or more".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e}: give a number of submissions (1 or more)")),
    }
}
