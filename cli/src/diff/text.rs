//! `diff`'s text report, read from the typed [`Report`] (its rows borrowed from the
//! comparison): names as the trace holds them, escaped and long ones shortened
//! ([`crate::output::shown_name`]), as every verb's text shows them.

use super::report::{Report, annotation_ratio, annotation_status, op_ratio};
use hrx_analysis::compare::too_spread;
use hrx_analysis::diff::{
    AnnotationRow, KernelRow, OpTimes, Place, RegionTimes, SAME_AS_FAR_AS_BOTH_GO,
};
use hrx_analysis::units::{duration, id_runs, plural, ratio, ratio_with_interval};
use hrx_analysis::{AnnotationStats, KernelStats};
use std::io::{self, Write};

/// Differing outputs and changed outcomes the text report lists, each; `--json` has all.
const LISTED: usize = 20;

/// One side of a judged row, as its table shows it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SideTimes {
    /// Its runs (or ranges).
    pub count: u64,
    /// Its median.
    pub p50_ns: u64,
    /// Its 99th percentile.
    pub p99_ns: u64,
    /// Its fastest.
    pub min_ns: u64,
    /// Its slowest.
    pub max_ns: u64,
}

impl From<&KernelStats> for SideTimes {
    fn from(k: &KernelStats) -> SideTimes {
        SideTimes {
            count: k.count,
            p50_ns: k.p50_ns,
            p99_ns: k.p99_ns,
            min_ns: k.min_ns,
            max_ns: k.max_ns,
        }
    }
}

impl From<&AnnotationStats> for SideTimes {
    fn from(a: &AnnotationStats) -> SideTimes {
        SideTimes {
            count: a.count,
            p50_ns: a.p50_ns,
            p99_ns: a.p99_ns,
            min_ns: a.min_ns,
            max_ns: a.max_ns,
        }
    }
}

/// A row judged by the kernel rule (a kernel's, an annotation range's, an operation's), as
/// its table reads it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Judged<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its base side, if it has one.
    pub base: Option<SideTimes>,
    /// Its new side.
    pub new: Option<SideTimes>,
    /// The ratio of its medians.
    pub ratio: Option<f64>,
    /// That ratio's confidence interval.
    pub interval: Option<(f64, f64)>,
    /// Too few runs on a side to judge.
    pub too_few: bool,
    /// Past `--max-slowdown` by the kernel rule.
    pub slow: bool,
}

impl Judged<'_> {
    /// Its interval holds 1 and spans more than [`hrx_analysis::compare::TOO_WIDE`].
    fn too_spread(&self) -> bool {
        too_spread(self.interval)
    }

    /// `BASE/NEW` runs (0 for a side it lacks).
    fn runs(&self) -> String {
        let count = |s: Option<SideTimes>| s.map_or(0, |s| s.count);
        format!("{}/{}", count(self.base), count(self.new))
    }
}

impl<'a> From<&'a OpTimes> for Judged<'a> {
    fn from(o: &'a OpTimes) -> Judged<'a> {
        Judged {
            name: &o.key.name,
            base: Some((&o.base).into()),
            new: Some((&o.new).into()),
            ratio: op_ratio(o),
            interval: o.interval,
            too_few: o.too_few,
            slow: o.slow,
        }
    }
}

/// A duration, `-` without one.
fn ns(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), duration)
}

/// A side's median and 99th percentile, `-` without the side.
fn p50_p99(s: Option<SideTimes>) -> (String, String) {
    (ns(s.map(|s| s.p50_ns)), ns(s.map(|s| s.p99_ns)))
}

/// The text report.
pub(super) fn write_text(out: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let (c, m) = (r.c, r.m);
    for (side, lost) in ["base", "new"].into_iter().zip(c.records_lost) {
        if lost > 0 {
            writeln!(
                out,
                "{side} trace lost {lost} records while recording: what it lacks of the \
                 other's is said as `lost by {side}'s recorder`, not a difference"
            )?;
        }
    }
    write_kernels(out, &c.kernels)?;
    write_operations(out, r)?;
    // The application's ranges (format 1.14): reported, never judged.
    write_annotations(out, &c.annotations, r.max_slowdown)?;
    let g = &c.regions;
    // The table below pools the regions of identical graphs (one row a place): say so where
    // it has fewer rows than regions matched.
    let rows = g.times.len() as u64;
    let pooled = match g.matched as u64 {
        matched if rows > 0 && rows < matched => {
            format!(
                " (in {} below: identical graphs' regions pooled)",
                plural(rows, "row")
            )
        }
        _ => String::new(),
    };
    // Regions of prepared graphs, as their rows below (each over its runs, as the kernels'
    // `runs` column counts them): a count of runs read "1 matched" beside "8/8 runs" as if
    // the other 7 were unmatched.
    // Regions paired by label are said on this one line (they had a `regions` line of their
    // own further down: a fresh user's pass read two `regions` blocks).
    let by_label = match r.regions_matched_by_label {
        0 => String::new(),
        n => format!(
            "; {n} of new matched by label (their graph gained or lost a region; indices are \
             base's)"
        ),
    };
    writeln!(
        out,
        "\nregions      {} matched (each a prepared graph's region, over its runs), {} only in \
         base, {} only in new, {} relabelled{pooled}{by_label}",
        g.matched,
        g.only_base,
        g.only_new,
        g.relabelled.len()
    )?;
    write_region_times(out, &g.times)?;
    let other_graphs = match m.outputs_of_other_graphs {
        0 => String::new(),
        n => format!("; {n} of other graphs at one number, not compared"),
    };
    writeln!(
        out,
        "outputs      {} compared, {} identical, {} differ; {} only in base, {} only in \
         new{other_graphs}",
        r.outputs_compared(),
        m.identical,
        m.differing.len(),
        m.outputs_one_sided[0],
        m.outputs_one_sided[1]
    )?;
    for d in m.differing.iter().take(LISTED) {
        let (buffer, new_buffer) = (d.base.1, d.new.1);
        let place = match d.key.3 {
            Place::Use(node, use_) | Place::Op { node, use_, .. } => {
                format!("node {node} use {use_} (buffer {buffer}")
            }
            Place::Buffer(_) => format!("(buffer {buffer}"),
        };
        let new_buffer = match new_buffer {
            b if b == buffer => String::new(),
            b => format!(", {b} in new"),
        };
        writeln!(
            out,
            "  differs    submission {} {place}{new_buffer}) bytes {}..{}: {:#018x} -> {:#018x}",
            d.base.2, d.key.4, d.key.5, d.base.0, d.new.0
        )?;
    }
    more(out, m.differing.len())?;
    writeln!(
        out,
        "submissions  {} compared, {}{}{}",
        m.outcomes_compared,
        plural(m.changed.len() as u64, "changed outcome"),
        match m.outcomes_unknown {
            0 => String::new(),
            n => format!("; {n} without a recorded outcome (not compared)"),
        },
        match m.submissions_one_sided {
            [0, 0] => String::new(),
            [b, n] => format!("; {b} only in base, {n} only in new"),
        }
    )?;
    for d in m.changed.iter().take(LISTED) {
        let new_submission = match d.submission[1] {
            n if n == d.submission[0] => String::new(),
            n => format!(" ({n} in new)"),
        };
        writeln!(
            out,
            "  changed    submission {}{new_submission}: {} -> {}",
            d.submission[0],
            d.base.name(),
            d.new.name()
        )?;
    }
    more(out, m.changed.len())?;
    match r.graphs_matched_by_structure {
        0 => {}
        n => writeln!(
            out,
            "graphs       {n} of new matched by structure (prepared in another order than in base)"
        )?,
    }
    for (i, side) in ["base", "new"].into_iter().enumerate() {
        let (past, late) = (m.unmatched_past_window[i], m.late_records[i]);
        if past > 0 {
            writeln!(
                out,
                "window       {past} {side} items left the match window unmatched (the submission sequences differ): counted as only in {side}"
            )?;
        }
        if late > 0 {
            writeln!(
                out,
                "window       {late} {side} digests or completions came too late to join their submission: compared as if its submit were missing"
            )?;
        }
    }
    if c.arguments_differ() {
        let line = |v: &Option<Vec<String>>| match v {
            Some(args) => (args.iter())
                .map(|x| crate::output::shown_text(x))
                .collect::<Vec<_>>()
                .join(" "),
            None => "(no session record)".to_owned(),
        };
        writeln!(
            out,
            "arguments    differ (the traces record different runs)"
        )?;
        writeln!(out, "  base       {}", line(&c.arguments[0]))?;
        writeln!(out, "  new        {}", line(&c.arguments[1]))?;
    }
    let past = c.past_an_end as u64;
    let mut one_sided = match (c.one_sided as u64).saturating_sub(past) {
        0 => String::new(),
        n => format!(
            "; {} in one trace only or relabelled (see above)",
            plural(n, "item")
        ),
    };
    if past > 0 {
        one_sided.push_str(&format!(
            "; {} an incomplete trace lacks (past its end, damaged or lost by its recorder), \
             not compared",
            plural(past, "item")
        ));
    }
    let graph_changes = match c.graph_changes.len() as u64 {
        0 => String::new(),
        n => format!(
            ", {} added to or removed from a graph",
            plural(n, "operation")
        ),
    };
    for (side, load) in ["base", "new"].into_iter().zip(r.host_load) {
        if let Some(load) = load.filter(|&l| l >= 1.0) {
            writeln!(
                out,
                "host load    {side} was recorded on a loaded host (up to {}, 1-minute \
                 average): its host-side times include waits for a CPU",
                hrx_analysis::units::host_load(hrx_analysis::units::Load::PerCpu(load))
            )?;
        }
    }
    if !r.reasons.is_empty() {
        let reasons: Vec<_> = r
            .reasons
            .iter()
            .map(|x| crate::output::shown_text(x))
            .collect();
        writeln!(out, "because      {}", reasons.join("; "))?;
    }
    writeln!(
        out,
        "verdict      {} (exit {}): {} (the median ratio's interval past {}), {}, {}, {}, {}{graph_changes}{one_sided}",
        {
            let text = match r.verdict {
                SAME_AS_FAR_AS_BOTH_GO => "same as far as both traces go",
                name => name,
            };
            crate::output::paint_out(text, crate::output::verdict_tone(r.verdict))
        },
        r.exit_code,
        plural(c.slow_kernels as u64, "slow kernel"),
        ratio(r.max_slowdown),
        plural(m.differing.len() as u64, "differing output"),
        plural(m.changed.len() as u64, "changed outcome"),
        plural(c.new_kernels as u64, "new kernel"),
        plural(c.missing_kernels as u64, "missing kernel"),
    )
}

impl<'a> From<&'a KernelRow> for Judged<'a> {
    fn from(k: &'a KernelRow) -> Judged<'a> {
        Judged {
            name: &k.name,
            base: k.base.as_ref().map(SideTimes::from),
            new: k.new.as_ref().map(SideTimes::from),
            ratio: k.ratio(),
            interval: k.interval,
            too_few: k.too_few,
            slow: k.slow,
        }
    }
}

impl<'a> From<&'a AnnotationRow> for Judged<'a> {
    fn from(a: &'a AnnotationRow) -> Judged<'a> {
        Judged {
            name: &a.name,
            base: a.base.as_ref().map(SideTimes::from),
            new: a.new.as_ref().map(SideTimes::from),
            ratio: annotation_ratio(a),
            interval: a.interval,
            too_few: a.too_few,
            slow: a.slow,
        }
    }
}

/// The kernels' table: each row marked by its status ([`KernelRow::status`]) or judgement.
fn write_kernels(out: &mut impl Write, kernels: &[KernelRow]) -> io::Result<()> {
    let w = runs_width(kernels.iter().map(|k| Judged::from(k).runs()));
    judged_header(out, w, "kernel", "runs")?;
    for row in kernels {
        let k = &Judged::from(row);
        let mark = match (row.status(), k.slow) {
            (_, true) => "  SLOW".to_owned(),
            ("new", _) => "  NEW".to_owned(),
            ("missing", _) => "  MISSING".to_owned(),
            ("added", _) => "  added to a graph (below)".to_owned(),
            ("removed", _) => "  removed from a graph (below)".to_owned(),
            ("relabelled", _) => "  relabelled region (below)".to_owned(),
            _ => too_few_mark(k),
        };
        let ((base_p50, base_p99), (new_p50, new_p99)) = (p50_p99(k.base), p50_p99(k.new));
        let name = crate::output::shown_name(k.name);
        let figures = [base_p50, new_p50, base_p99, new_p99];
        judged_line(out, w, (&*name, k), figures, &mark)?;
    }
    Ok(())
}

/// The annotation ranges' table (none where there are none), with the waits on the
/// recorder their times leave out under it.
fn write_annotations(
    out: &mut impl Write,
    rows: &[AnnotationRow],
    max_slowdown: f64,
) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let w = runs_width(rows.iter().map(|a| Judged::from(a).runs()));
    writeln!(out)?;
    judged_header(out, w, "annotation", "ranges")?;
    for row in rows {
        let a = &Judged::from(row);
        let mark = match annotation_status(row) {
            "new" => "  new".to_owned(),
            "missing" => "  missing".to_owned(),
            _ => not_judged_mark(max_slowdown, a, "ranges"),
        };
        let ((base_p50, base_p99), (new_p50, new_p99)) = (p50_p99(a.base), p50_p99(a.new));
        let name = crate::output::shown_name(a.name);
        let figures = [base_p50, new_p50, base_p99, new_p99];
        judged_line(out, w, (&*name, a), figures, &mark)?;
    }
    // Capture work inside the ranges, left out of their times (`stats` does the same).
    fn base_side(a: &AnnotationRow) -> Option<&AnnotationStats> {
        a.base.as_ref()
    }
    fn new_side(a: &AnnotationRow) -> Option<&AnnotationStats> {
        a.new.as_ref()
    }
    let sum = |side: fn(&AnnotationRow) -> Option<&AnnotationStats>,
               of: fn(&AnnotationStats) -> u64| {
        rows.iter().filter_map(side).map(of).sum::<u64>()
    };
    let (base, new) = (
        sum(base_side, |s| s.capture_wait_ns),
        sum(new_side, |s| s.capture_wait_ns),
    );
    let (base_untold, new_untold) = (
        sum(base_side, |s| s.capture_wait_untold_ranges),
        sum(new_side, |s| s.capture_wait_untold_ranges),
    );
    if base + new > 0 {
        writeln!(
            out,
            "(times leave out waits on the trace recorder and at capture fences inside the \
             ranges: {} in base, {} in new)",
            duration(base),
            duration(new)
        )?;
    }
    // Ranges that began among the waits let go of keep those in their times (as `stats`).
    if base_untold + new_untold > 0 {
        writeln!(
            out,
            "(ranges that began among more than {} earlier waits of their thread on the \
             recorder and at capture fences: {base_untold} in base, {new_untold} in new; those \
             waits inside them are not left out of their times)",
            hrx_analysis::stats::CAPTURE_WAITS_KEPT
        )?;
    }
    Ok(())
}

/// A judged row's ratio of medians as `replay` writes it, with its confidence interval
/// where it has one (`1.50x [1.25x..1.75x]`, the one formatter:
/// [`hrx_analysis::units::ratio_with_interval`]); `-` without a ratio.
///
/// A ratio or an interval end that is not finite (a side's median or bound of 0 ns) is shown
/// as the JSON has it, null: `-` for the ratio, no interval. Read from the JSON tree, the
/// text did so; read from the typed rows it said `infx` and `NaNx` (a break-it pass).
fn judged_ratio(row: &Judged<'_>) -> String {
    let interval = row
        .interval
        .filter(|(low, high)| low.is_finite() && high.is_finite());
    finite(row.ratio).map_or_else(|| "-".to_owned(), |r| ratio_with_interval(r, interval))
}

/// `v` where it is finite: the JSON writes a ratio that is not (`inf`, `NaN`) as null, and
/// the text shows such a one as the JSON has it.
fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
}

/// The mark of a judged row that is not judged: too few runs on a side (under 7), or an
/// interval around 1 too wide to mean anything ([`hrx_analysis::compare::TOO_WIDE`]), which was printed as if it
/// were a judgement (`0.85x [0.00x..243.62x]`: a fresh user's pass). A wide interval wholly
/// on one side of 1 still says faster or slower. Why it is too spread is said as for the
/// rows that are not judged ([`spread_why`]): a kernel row over 8 runs a side gave "unlike
/// work under one name, or a loaded host?" where the same samples' operation row said its
/// few runs were why (a break-it pass).
fn too_few_mark(row: &Judged<'_>) -> String {
    if row.too_few {
        "  too few to judge".to_owned()
    } else if row.too_spread() {
        match spread_why(row, "runs") {
            SpreadWhy::Magnitude(why) => {
                format!(
                    "  too spread to judge: {why} (unlike work under one name, or a loaded host?)"
                )
            }
            SpreadWhy::Few(why) | SpreadWhy::Interval(why) => {
                format!("  too spread to judge: {why}")
            }
        }
    } else {
        String::new()
    }
}

/// Why a row's ratio's interval is too spread, as its samples show it ([`spread_why`]).
enum SpreadWhy {
    /// Few samples: the median's interval runs from a side's fastest sample to its slowest
    /// (at 9 or fewer a side).
    Few(String),
    /// A side's slowest sample is 10 times its fastest or more.
    Magnitude(String),
    /// Neither: the ratio's interval spans more than 10x (what `too_spread` means).
    Interval(String),
}

/// Why `row`'s interval is too spread, its samples called `noun` (`runs`, `ranges`), in
/// words that are true of it: at 9 or fewer samples on its fewer side, the median's
/// interval spans all of them (`at 8 ranges a side`, or `at 8 and 12 ranges` where the
/// sides differ); where a side's slowest is 10 times its fastest or more, they differ by an
/// order of magnitude; else the ratio's interval spans more than 10x at so many samples.
/// (A break-it pass: rows of 10 to 14 samples a side, their sides within 3x, read "a side's
/// ranges differ by an order of magnitude", and sides of 8 and 12 "at 8 ranges a side".)
fn spread_why(row: &Judged<'_>, noun: &str) -> SpreadWhy {
    let sides: Vec<SideTimes> = [row.base, row.new].into_iter().flatten().collect();
    let counts: Vec<u64> = sides.iter().map(|s| s.count).collect();
    let fewer = counts.iter().copied().min().unwrap_or(0);
    let at = match counts[..] {
        [a, b] if a != b => format!("at {a} and {b} {noun}"),
        _ => format!("at {fewer} {noun} a side"),
    };
    let magnitude = sides.iter().any(|s| {
        s.max_ns > 0 && s.max_ns as f64 >= s.min_ns as f64 * hrx_analysis::compare::TOO_WIDE
    });
    if fewer > 0 && hrx_analysis::sketch::median_ranks(fewer) == Some((1, fewer)) {
        SpreadWhy::Few(match counts[..] {
            [a, b] if a != b => format!("{at} the interval spans all {fewer} of a side"),
            _ => format!("{at} the interval spans them all"),
        })
    } else if magnitude {
        SpreadWhy::Magnitude(format!("a side's {noun} differ by an order of magnitude"))
    } else {
        SpreadWhy::Interval(format!(
            "{at} the ratio's interval spans more than {}x",
            hrx_analysis::compare::TOO_WIDE
        ))
    }
}

/// The mark of a row compared by the kernel rule but not judged (an annotation range, an
/// operation by place: the kernels' rows decide the verdict), its samples `noun` (`ranges`,
/// `runs`): one whose ratio's interval lies past `--max-slowdown` is what it is, not
/// `slower`, which a user read as a judgement beside a `same` verdict while the README says
/// such rows are "reported, not judged"; one too few or too spread to say faster or slower
/// is too few or too spread to compare, not "to judge" (it never is), and not for "unlike
/// work under one name, or a loaded host?" where its few samples are why: at 9 or fewer a
/// side, the median's interval runs from a side's fastest sample to its slowest (a fresh
/// user's 8 frames called four of five annotation ranges `too spread to judge`). Why is
/// [`spread_why`]'s.
fn not_judged_mark(max_slowdown: f64, row: &Judged<'_>, noun: &str) -> String {
    if row.slow {
        format!("  past {} (reported, not judged)", ratio(max_slowdown))
    } else if row.too_few {
        format!("  too few {noun} to compare (reported, not judged)")
    } else if !row.too_spread() {
        String::new()
    } else {
        let (SpreadWhy::Few(why) | SpreadWhy::Magnitude(why) | SpreadWhy::Interval(why)) =
            spread_why(row, noun);
        format!("  too spread to compare: {why} (reported, not judged)")
    }
}

/// Says how many rows past [`LISTED`] the text report left out.
fn more(out: &mut impl Write, rows: usize) -> io::Result<()> {
    match rows.saturating_sub(LISTED) {
        0 => Ok(()),
        n => writeln!(out, "  ... and {n} more (all with --json)"),
    }
}

/// The matched regions' medians (`regions.times`), reported, never judged (the kernels
/// decide): the largest ratio first, as the header says, so that the [`LISTED`] shown are
/// the worst; all with `--json`, by place.
fn write_region_times(out: &mut impl Write, times: &[RegionTimes]) -> io::Result<()> {
    if times.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "{:<28} {:>11} {:>11} {:>9}",
        "  region (worst ratio first)", "base p50", "new p50", "ratio"
    )?;
    let of = |t: &RegionTimes| finite(t.ratio()).unwrap_or(f64::NAN);
    let mut rows: Vec<&RegionTimes> = times.iter().collect();
    rows.sort_by(|a, b| of(b).total_cmp(&of(a)));
    for t in rows.iter().take(LISTED) {
        let graphs: Vec<u64> = t.graphs.iter().map(|&g| g.saturating_add(1)).collect();
        let name = format!(
            "  g{} r{} {}",
            id_runs(&graphs),
            t.key.region,
            crate::output::shown_text(&t.label)
        );
        let ratio = finite(t.ratio()).map_or_else(|| "-".to_owned(), ratio);
        writeln!(
            out,
            "{} {:>11} {:>11} {ratio:>9}",
            crate::output::padded(&name, 28),
            duration(t.base_p50_ns),
            duration(t.new_p50_ns),
        )?;
    }
    more(out, times.len())
}

/// What changed in the graphs' operations: what a trace without operation timings lacks,
/// kernels added to or removed from a graph, and each operation's medians by its place.
fn write_operations(out: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let c = r.c;
    // `graph 2 region 1`, with the runtime where there are several.
    let place = |runtime: u32, prepared: u64, region: u32| match runtime.saturating_add(1) {
        1 => format!("graph {} region {region}", prepared.saturating_add(1)),
        rt => format!(
            "runtime {rt} graph {} region {region}",
            prepared.saturating_add(1)
        ),
    };
    if let Some(note) = &c.op_note {
        writeln!(
            out,
            "{:<12} {}",
            "operations",
            crate::output::shown_text(note)
        )?;
    }
    for g in c.graph_changes.iter().take(LISTED) {
        // Which operation, as the timing rows name it (`fill #3`: the graph's third `fill`)
        // and by its node: several added to one region read as the same line repeated (a
        // fresh user's pass).
        let nth = match g.key.nth.saturating_add(1) {
            1 => String::new(),
            n => format!(" #{n}"),
        };
        writeln!(
            out,
            "{:<12} {}: {} {}{nth} (node {}, {})",
            "operation",
            place(g.key.runtime, g.key.prepared, g.region),
            if g.added { "+" } else { "-" },
            crate::output::shown_name(&g.key.name),
            g.node,
            if g.added { "added" } else { "removed" },
        )?;
    }
    more(out, c.graph_changes.len())?;
    write_op_times(out, &c.op_times, r.max_slowdown)
}

/// The operations timed in both traces, by place: the slow first, then as a graph runs
/// (graph, region, node), each named by its region as the region rows name it (base's
/// index: [`OpTimes::place`]).
fn write_op_times(out: &mut impl Write, times: &[OpTimes], max_slowdown: f64) -> io::Result<()> {
    if times.is_empty() {
        return Ok(());
    }
    let w = runs_width(times.iter().map(|o| Judged::from(o).runs()));
    writeln!(out)?;
    judged_header(out, w, "operation (slow, then place)", "runs")?;
    // The slow first, then by place as a graph runs (graph, region, node), as the header
    // says (a region's operations went by name: `fill` before `rgb_to_gray`, a break-it
    // pass); the JSON is by graph and name. The text lists LISTED, `--json` all.
    let mut rows: Vec<&OpTimes> = times.iter().collect();
    rows.sort_by_key(|o| {
        let (region, node) = o.place();
        let place = (o.key.runtime, o.key.prepared, region, node);
        (!o.slow, place, o.key.name.as_str(), o.key.nth)
    });
    for o in rows.iter().take(LISTED) {
        let nth = match o.key.nth.saturating_add(1) {
            1 => String::new(),
            n => format!(" #{n}"),
        };
        // The graphs the row pools (`g1-3`: three identical graphs), else its graph.
        let graphs: Vec<u64> = o.graphs.iter().map(|&g| g.saturating_add(1)).collect();
        let name = format!(
            "g{} r{} {}{nth}",
            id_runs(&graphs),
            o.place().0,
            crate::output::shown_name(&o.key.name)
        );
        let row = Judged::from(*o);
        let mark = not_judged_mark(max_slowdown, &row, "runs");
        let figures = [o.base.p50_ns, o.new.p50_ns, o.base.p99_ns, o.new.p99_ns].map(duration);
        judged_line(out, w, (&*name, &row), figures, &mark)?;
    }
    more(out, times.len())
}

/// The header of a judged table (kernels, annotations, operations): its first column's and
/// its runs column's names, the runs column `w` wide.
fn judged_header(out: &mut impl Write, w: usize, first: &str, runs: &str) -> io::Result<()> {
    writeln!(
        out,
        "{:<28} {:>w$} {:>11} {:>11} {:>11} {:>11} {:>22}",
        first, runs, "base p50", "new p50", "base p99", "new p99", "ratio [95% interval]"
    )
}

/// A judged table's row: its name, its runs, `figures` (base p50, new p50, base p99, new
/// p99, as shown), its ratio and interval, then `mark`.
fn judged_line(
    out: &mut impl Write,
    w: usize,
    (name, row): (&str, &Judged<'_>),
    figures: [String; 4],
    mark: &str,
) -> io::Result<()> {
    let [base_p50, new_p50, base_p99, new_p99] = figures;
    writeln!(
        out,
        "{} {:>w$} {:>11} {:>11} {:>11} {:>11} {:>22}{mark}",
        crate::output::padded(name, 28),
        row.runs(),
        base_p50,
        new_p50,
        base_p99,
        new_p99,
        judged_ratio(row),
    )
}

/// The width of a table's `runs` column (`BASE/NEW` counts): at least its header's 9, so
/// that 15,000,000 runs a side do not push the later columns out of line.
fn runs_width(runs: impl Iterator<Item = String>) -> usize {
    runs.map(|runs| runs.len()).fold(9, usize::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx_analysis::diff::OpKey;
    use hrx_analysis::matching::RegionKey;

    fn text(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn line<'a>(text: &'a str, start: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("{start:?} in\n{text}"))
    }

    /// A kernel's durations: `count` runs, median `p50_ns` (99th percentile twice it),
    /// fastest and slowest `min_ns`, `max_ns`.
    fn stats(name: &str, count: u64, p50_ns: u64, (min_ns, max_ns): (u64, u64)) -> KernelStats {
        KernelStats {
            label: hrx_analysis::stats::NO_LABEL,
            name: name.to_owned(),
            count,
            total_ns: p50_ns * count,
            mean_ns: p50_ns,
            p50_ns,
            p99_ns: 2 * p50_ns,
            min_ns,
            max_ns,
            exact: true,
            failed: 0,
            device: 0,
            p50_interval_ns: None,
        }
    }

    fn annotation(
        name: &str,
        count: u64,
        p50_ns: u64,
        (min_ns, max_ns): (u64, u64),
    ) -> AnnotationStats {
        AnnotationStats {
            name: name.to_owned(),
            count,
            p50_ns,
            p99_ns: 2 * p50_ns,
            min_ns,
            max_ns,
            ..Default::default()
        }
    }

    fn kernel(base: KernelStats, new: KernelStats, (lo, hi): (f64, f64), slow: bool) -> KernelRow {
        KernelRow {
            name: base.name.clone(),
            base: Some(base),
            new: Some(new),
            slow,
            interval: Some((lo, hi)),
            too_few: false,
            graph_change: false,
            operation_change: false,
        }
    }

    fn range(
        base: AnnotationStats,
        new: AnnotationStats,
        interval: Option<(f64, f64)>,
        slow: bool,
    ) -> AnnotationRow {
        AnnotationRow {
            name: base.name.clone(),
            base: Some(base),
            new: Some(new),
            slow,
            interval,
            too_few: interval.is_none(),
        }
    }

    /// An operation of graph 1 (`g1`) in region `region` (base's, new's) at node `node`.
    fn op(name: &str, region: [u32; 2], node: u32, base: KernelStats, new: KernelStats) -> OpTimes {
        OpTimes {
            key: OpKey {
                runtime: 0,
                prepared: 0,
                name: name.to_owned(),
                nth: 0,
            },
            graphs: vec![0],
            region,
            node: [node, node],
            base,
            new,
            slow: false,
            interval: Some((0.9, 1.1)),
            too_few: false,
        }
    }

    #[test]
    fn the_runs_column_is_as_wide_as_its_widest_count() {
        let row = |count| {
            let side = SideTimes {
                count,
                ..Default::default()
            };
            Judged {
                base: Some(side),
                new: Some(side),
                ..Default::default()
            }
            .runs()
        };
        let rows = [row(15_000_000), row(3)];
        assert_eq!(runs_width(rows.iter().cloned()), "15000000/15000000".len());
        assert_eq!(runs_width(rows[1..].iter().cloned()), 9);
        assert_eq!(runs_width(std::iter::empty()), 9);
    }

    #[test]
    fn a_row_too_few_or_too_spread_to_judge_says_so() {
        let row = |interval: Option<(f64, f64)>, too_few| Judged {
            interval,
            too_few,
            ..Default::default()
        };
        assert_eq!(too_few_mark(&row(None, true)), "  too few to judge");
        assert_eq!(too_few_mark(&row(Some((0.9, 1.2)), false)), "");
        assert_eq!(too_few_mark(&row(Some((0.3, 2.9)), false)), "");
        assert!(too_few_mark(&row(Some((0.0, 243.62)), false)).starts_with("  too spread"));
        assert!(too_few_mark(&row(Some((0.2, 2.5)), false)).starts_with("  too spread"));
        // Wide, but wholly faster or slower: judged.
        assert_eq!(too_few_mark(&row(Some((0.0283, 0.293)), false)), "");
        assert_eq!(too_few_mark(&row(Some((1.5, 40.0)), false)), "");
    }

    /// A range named in wide characters (two terminal columns each) keeps the columns after
    /// it in line with an ASCII name's, as `stats`' tables do (padded by characters, its
    /// figures stood 8 columns right: break-it pass, session 53).
    #[test]
    fn wide_names_keep_the_columns_aligned() {
        let row = |name: &str| {
            let side = || annotation(name, 3, 0, (0, 0));
            range(side(), side(), Some((0.9, 1.1)), false)
        };
        let names = ["decode", "日本語の長い名前", "😀 emoji"];
        let rows: Vec<AnnotationRow> = names.iter().map(|n| row(n)).collect();
        let text = text(|out| write_annotations(out, &rows, 1.5));
        let runs_end = |name: &str| {
            let line = line(&text, name);
            let rest = line[name.len()..].trim_start();
            let runs = rest.split(' ').next().unwrap();
            unicode_width::UnicodeWidthStr::width(&line[..line.len() - rest.len() + runs.len()])
        };
        let ends: Vec<usize> = names.iter().map(|n| runs_end(n)).collect();
        assert!(ends.iter().all(|&e| e == ends[0]), "{ends:?} in\n{text}");
    }

    /// Ranges that began among more capture waits than are kept are said under the
    /// annotation table, per side, as `stats` does (the JSON counts them: `report`'s tests).
    #[test]
    fn ranges_that_keep_untold_capture_waits_are_said() {
        let side = |untold| AnnotationStats {
            capture_wait_untold_ranges: untold,
            ..annotation("main", 3, 1000, (900, 1100))
        };
        let said = |base: u64, new: u64| {
            let rows = [range(side(base), side(new), Some((0.9, 1.1)), false)];
            text(|out| write_annotations(out, &rows, 1.5))
        };
        let text = said(0, 2);
        assert!(
            text.contains(
                "(ranges that began among more than 4096 earlier waits of their thread on the \
                 recorder and at capture fences: 0 in base, 2 in new; those waits inside them \
                 are not left out of their times)"
            ),
            "{text}"
        );
        assert!(!said(0, 0).contains("began among"));
    }

    /// An interval whose end is not finite (a side's fastest run of 0 ns) is shown as the
    /// JSON has it, null: no interval, the row's ratio alone, as the text read from the JSON
    /// tree showed it; read from the typed rows it said `1.00x [0.33x..infx]` (a break-it
    /// pass: `diff` of a graph that gained a region against the one without). Its marks are
    /// the interval's own (too spread, from the interval as it is).
    #[test]
    fn an_interval_that_is_not_finite_is_shown_as_the_json_has_it() {
        let spread = (10, 30);
        let k = kernel(
            stats("hrx_fill", 8, 10, spread),
            stats("hrx_fill", 8, 10, spread),
            (0.33, f64::INFINITY),
            false,
        );
        let mut o = op(
            "hrx_fill",
            [1, 1],
            1,
            stats("hrx_fill", 8, 10, spread),
            stats("hrx_fill", 8, 10, spread),
        );
        o.interval = Some((0.33, f64::INFINITY));
        let a = range(
            annotation("frame", 8, 10, spread),
            annotation("frame", 8, 10, spread),
            Some((f64::NAN, 3.0)),
            false,
        );
        let text = text(|out| {
            write_kernels(out, std::slice::from_ref(&k))?;
            write_annotations(out, std::slice::from_ref(&a), 1.5)?;
            write_op_times(out, &[o], 1.5)
        });
        assert!(!text.contains("inf") && !text.contains("NaN"), "{text}");
        for name in ["hrx_fill ", "frame ", "r1 hrx_fill "] {
            let row = (text.lines())
                .find(|l| l.contains(name))
                .unwrap_or_else(|| panic!("{name}: {text}"));
            assert!(row.contains(" 1.00x"), "{row}");
        }
    }

    /// Rows reported, not judged (annotation ranges, operations by place), too few or too
    /// spread to say faster or slower, say so without "to judge" (they never are), and why
    /// in words true of their samples: 8 ranges a side make the median's interval every
    /// sample's (a fresh user's 8 frames called four of five annotation rows `too spread to
    /// judge (unlike work under one name, or a loaded host?)`); an order of magnitude only
    /// where a side's slowest is 10 times its fastest (rows of 12 ranges a side within 3x
    /// were said to differ so), and sides of 8 and 12 as such. A kernel's row, judged, says
    /// too spread to judge, and its few runs where those are why, as the operation row over
    /// the same runs does (a break-it pass: the two gave two explanations).
    #[test]
    fn rows_not_judged_say_they_are_too_few_or_too_spread_to_compare_and_why() {
        let close = (800_000, 1_500_000);
        let far = (10_000, 900_000);
        let k = |name: &str, (b, n): (u64, u64), spread, interval| {
            kernel(
                stats(name, b, 1_000_000, spread),
                stats(name, n, 1_000_000, spread),
                interval,
                false,
            )
        };
        let a = |name: &str, (b, n): (u64, u64), spread, interval| {
            range(
                annotation(name, b, 1_000_000, spread),
                annotation(name, n, 1_000_000, spread),
                interval,
                false,
            )
        };
        let kernels = [
            k("hrx_sobel", (8, 8), close, (0.22, 3.45)),
            k("hrx_blur", (40, 40), far, (0.01, 134.0)),
            k("hrx_scale", (12, 14), close, (0.3, 3.2)),
        ];
        let annotations = [
            a("scale photo", (8, 8), close, Some((0.22, 3.45))),
            a("wait for a photo", (40, 40), far, Some((0.01, 134.0))),
            a("decode", (12, 12), close, Some((0.3, 3.2))),
            a("write", (8, 12), close, Some((0.3, 3.2))),
            a("open", (3, 3), close, None),
        ];
        let mut sobel = op(
            "hrx_sobel",
            [1, 1],
            1,
            stats("hrx_sobel", 8, 1_000_000, close),
            stats("hrx_sobel", 8, 1_000_000, close),
        );
        sobel.interval = Some((0.22, 3.45));
        let text = text(|out| {
            write_kernels(out, &kernels)?;
            write_annotations(out, &annotations, 1.5)?;
            write_op_times(out, &[sobel], 1.5)
        });
        for (row, mark) in [
            (
                "hrx_sobel ",
                "  too spread to judge: at 8 runs a side the interval spans them all",
            ),
            (
                "hrx_blur ",
                "  too spread to judge: a side's runs differ by an order of magnitude (unlike \
                 work under one name, or a loaded host?)",
            ),
            (
                "hrx_scale ",
                "  too spread to judge: at 12 and 14 runs the ratio's interval spans more than \
                 10x",
            ),
            (
                "scale photo ",
                "  too spread to compare: at 8 ranges a side the interval spans them all \
                 (reported, not judged)",
            ),
            (
                "wait for a photo ",
                "  too spread to compare: a side's ranges differ by an order of magnitude \
                 (reported, not judged)",
            ),
            (
                "decode ",
                "  too spread to compare: at 12 ranges a side the ratio's interval spans more \
                 than 10x (reported, not judged)",
            ),
            (
                "write ",
                "  too spread to compare: at 8 and 12 ranges the interval spans all 8 of a side \
                 (reported, not judged)",
            ),
            (
                "open ",
                "  too few ranges to compare (reported, not judged)",
            ),
            (
                "g1 r1 hrx_sobel ",
                "  too spread to compare: at 8 runs a side the interval spans them all \
                 (reported, not judged)",
            ),
        ] {
            assert!(line(&text, row).ends_with(mark), "{row:?}: {text}");
        }
    }

    /// An annotation range, or an operation by place, whose ratio lies past `--max-slowdown`
    /// is marked as reported, not judged (the kernels' rows decide the verdict), never
    /// `slower` as if it were judged; a kernel so slow is `SLOW`.
    #[test]
    fn rows_that_are_not_judged_do_not_read_as_judged() {
        let interval = (1.93, 8.06);
        let (base, new) = (1_000_000, 4_290_000);
        let slow = kernel(
            stats("hrx_sobel", 12, base, (base, base)),
            stats("hrx_sobel", 12, new, (new, new)),
            interval,
            true,
        );
        let scale = range(
            annotation("scale photo", 12, base, (base, base)),
            annotation("scale photo", 12, new, (new, new)),
            Some(interval),
            true,
        );
        let mut sobel = op(
            "hrx_sobel",
            [1, 1],
            1,
            stats("hrx_sobel", 12, base, (base, base)),
            stats("hrx_sobel", 12, new, (new, new)),
        );
        (sobel.slow, sobel.interval) = (true, Some(interval));
        let text = text(|out| {
            write_kernels(out, &[slow])?;
            write_annotations(out, &[scale], 1.5)?;
            write_op_times(out, &[sobel], 1.5)
        });
        assert!(
            line(&text, "hrx_sobel ").ends_with("4.29x [1.93x..8.06x]  SLOW"),
            "{text}"
        );
        for row in ["scale photo ", "g1 r1 hrx_sobel "] {
            assert!(
                line(&text, row)
                    .ends_with("4.29x [1.93x..8.06x]  past 1.50x (reported, not judged)"),
                "{text}"
            );
        }
        assert!(!text.contains("slower"), "{text}");
    }

    /// The by-place tables say their order in their headers and keep it: operations the slow
    /// first, then by place (graph, region, node: as a graph runs); regions the worst ratio
    /// first (`--json` has them all, by place). Neither order was said, and operations went
    /// by name (`r2 download` before `r0 upload`), which read as none (fresh-user pass); a
    /// region's operations still did (`fill` before `gray`: a break-it pass).
    #[test]
    fn the_by_place_tables_say_their_order() {
        let s = |name: &str| stats(name, 12, 1000, (900, 1100));
        let o = |region: u32, node: u32, name: &str, slow: bool| {
            let mut row = op(name, [region, region], node, s(name), s(name));
            row.slow = slow;
            row
        };
        let place = |region: u32, label: &str, ratio: f64| RegionTimes {
            key: RegionKey {
                runtime: 0,
                prepared: 0,
                region,
            },
            graphs: vec![0],
            label: label.to_owned(),
            base_p50_ns: 1000,
            new_p50_ns: (1000.0 * ratio) as u64,
        };
        let text = text(|out| {
            write_op_times(
                out,
                &[
                    o(2, 5, "download", false),
                    o(1, 3, "fill", false),
                    o(1, 1, "gray", false),
                    o(1, 2, "sobel", true),
                    o(0, 0, "upload", false),
                ],
                1.5,
            )?;
            write_region_times(
                out,
                &[
                    place(0, "upload", 0.7),
                    place(1, "gray", 0.9),
                    place(2, "download", 0.6),
                ],
            )
        });
        let rows = |header: &str| -> Vec<String> {
            (text.lines())
                .skip_while(|l| !l.starts_with(header))
                .skip(1)
                .take_while(|l| l.trim_start().starts_with("g1 "))
                .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
                .collect()
        };
        assert_eq!(
            rows("operation (slow, then place)"),
            [
                "g1 r1 sobel",
                "g1 r0 upload",
                "g1 r1 gray",
                "g1 r1 fill",
                "g1 r2 download"
            ],
            "{text}"
        );
        assert_eq!(
            rows("  region (worst ratio first)"),
            ["g1 r1 gray", "g1 r0 upload", "g1 r2 download"],
            "{text}"
        );
    }

    /// An operation row names its region as the region rows do: by base's index where a
    /// region added before it moved it in new (region rows take base's index once paired by
    /// label), and is ordered by that place. It named new's (`g1 r0 blur` beside the region
    /// row `g1 r1 compute`: a break-it pass).
    #[test]
    fn an_operation_row_names_its_region_by_base_index_as_the_region_rows_do() {
        let s = |name: &str| stats(name, 12, 1000, (900, 1100));
        let rows = [
            op("blur", [1, 0], 1, s("blur"), s("blur")),
            op("upload", [0, 3], 0, s("upload"), s("upload")),
        ];
        let text = text(|out| write_op_times(out, &rows, 1.5));
        let names: Vec<String> = (text.lines())
            .filter(|l| l.starts_with("g1 "))
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(names, ["g1 r0 upload", "g1 r1 blur"], "{text}");
    }
}
