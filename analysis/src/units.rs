//! Human-readable times, durations, byte counts and bandwidths, and the timeline ruler's
//! tick spacing: the one formatter every verb (`stats`, `info`, `diff`, `replay`, `dump`)
//! and the timeline use, so a duration reads the same everywhere.
//!
//! Durations have three significant digits (`850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`), byte
//! counts binary units with two decimals unless whole (`512 B`, `4 KiB`, `1.50 MiB`; side
//! by side, in one form: [`bytes_alike`]),
//! bandwidths decimal units as GPU bandwidths are quoted (`12.3 GB/s`), rates of events three
//! significant digits with a decimal prefix (`850 records/s`, `12.4k records/s`), host times
//! full ns resolution in ms (`12.345678 ms`) and ratios two decimals (`1.23x`).

/// Nanoseconds per unit, smallest first, with the unit's suffix.
const UNITS: [(u64, &str); 4] = [
    (1, "ns"),
    (1_000, "µs"),
    (1_000_000, "ms"),
    (1_000_000_000, "s"),
];

/// The largest unit not larger than `ns` (ns for 0).
fn unit_for(ns: u64) -> (u64, &'static str) {
    UNITS
        .iter()
        .rev()
        .copied()
        .find(|&(scale, _)| ns >= scale)
        .unwrap_or(UNITS[0])
}

/// A duration with three significant digits: `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`.
pub fn duration(ns: u64) -> String {
    let (scale, suffix) = unit_for(ns);
    if scale == 1 {
        return format!("{ns} ns");
    }
    let value = ns as f64 / scale as f64;
    let decimals = three_significant(value);
    format!("{value:.decimals$} {suffix}")
}

/// Decimals that write `value` (at least 1, below 1000) with three significant digits.
fn three_significant(value: f64) -> usize {
    if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    }
}

/// A host time at full (ns) resolution, in milliseconds: `12.345678 ms`.
pub fn time(ns: u64) -> String {
    format!("{}.{:06} ms", ns / 1_000_000, ns % 1_000_000)
}

/// A byte count with binary units: `512 B`, `4 KiB`, `1.50 MiB`.
pub fn bytes(n: u64) -> String {
    let [said] = bytes_alike([n]);
    said
}

/// Byte counts read side by side, each as [`bytes`] writes it, but all in one form: with two
/// decimals when any needs them (`2.46 KiB on disk, 21.00 KiB copied`; a rounded size beside
/// a whole one read as two formats, `2.46 KiB` and `21 KiB`).
pub fn bytes_alike<const N: usize>(counts: [u64; N]) -> [String; N] {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let scaled = counts.map(|n| {
        let mut value = n as f64;
        let mut unit = 0;
        while value >= 1024.0 && unit + 1 < UNITS.len() {
            value /= 1024.0;
            unit += 1;
        }
        (n, value, unit)
    });
    let whole = (scaled.iter()).all(|&(_, value, unit)| unit == 0 || value.fract() == 0.0);
    scaled.map(|(n, value, unit)| match (unit, whole) {
        (0, _) => format!("{n} B"),
        (_, true) => format!("{value:.0} {}", UNITS[unit]),
        (_, false) => format!("{value:.2} {}", UNITS[unit]),
    })
}

/// `1 frame`, `3 frames`.
pub fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if ["s", "sh", "ch", "x"].iter().any(|end| noun.ends_with(end)) {
        format!("{n} {noun}es")
    } else {
        format!("{n} {noun}s")
    }
}

/// A byte range `[start..end)` as `0..4096`.
pub fn range(start: u64, end: u64) -> String {
    format!("{start}..{end}")
}

/// A bandwidth in decimal units (as GPU bandwidths are quoted): `12.3 GB/s`.
pub fn bandwidth(bytes_per_s: f64) -> String {
    const UNITS: [&str; 5] = ["B/s", "KB/s", "MB/s", "GB/s", "TB/s"];
    let mut value = bytes_per_s;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A rate of events with three significant digits and a decimal prefix: `850 records/s`,
/// `12.4 frames/s`, `8.50k records/s`, `3.10M records/s`; negative or undefined rates read
/// `0 records/s`.
pub fn rate(per_s: f64, noun: &str) -> String {
    let per_s = if per_s.is_finite() {
        per_s.max(0.0)
    } else {
        0.0
    };
    let (value, prefix) = [(1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|&(scale, _)| per_s >= scale)
        .map_or((per_s, ""), |(scale, prefix)| (per_s / scale, prefix));
    if per_s == 0.0 {
        return format!("0 {noun}/s");
    }
    let decimals = three_significant(value);
    format!("{value:.decimals$}{prefix} {noun}/s")
}

/// A host's 1-minute load, as [`host_load`] writes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// The load average of a host with `cpus` CPUs (the host `record` or `replay` ran on).
    Average {
        /// The 1-minute load average.
        load: f64,
        /// The host's CPUs (0: unknown).
        cpus: usize,
    },
    /// The load average per CPU alone: what a trace records (`hrx: host load per CPU`).
    PerCpu(f64),
}

/// A host's 1-minute load, the one way every verb writes it: the load average with its
/// value per CPU, `4.96 (2.48 per CPU on 2 CPUs)`, where the CPUs are known, else the value
/// per CPU alone, `2.48 per CPU` (at 1 or more per CPU the host is loaded). A user found
/// `record`, `replay` and the readers each writing it in a unit of their own.
pub fn host_load(load: Load) -> String {
    match load {
        Load::Average { load, cpus: 0 } => format!("{load:.2}"),
        Load::Average { load, cpus } => format!(
            "{load:.2} ({:.2} per CPU on {})",
            load / cpus as f64,
            plural(cpus as u64, "CPU")
        ),
        Load::PerCpu(per_cpu) => format!("{per_cpu:.2} per CPU"),
    }
}

/// A ratio such as a slowdown, two decimals, two significant digits below 0.01 (a ratio of
/// wholly different work read `0.00x`), or scientific notation for huge and tiny ones:
/// `1.23x`, `0.0024x`, `2.40e-5x`, `1.00e9x`.
pub fn ratio(x: f64) -> String {
    if x >= 1e6 || (x > 0.0 && x < 1e-4) {
        format!("{x:.2e}x")
    } else if x > 0.0 && x < 0.01 {
        let decimals = 1 - x.log10().floor() as i32;
        format!("{x:.*}x", decimals.max(2) as usize)
    } else {
        format!("{x:.2}x")
    }
}

/// A ratio with its confidence interval where there is one, `1.50x [1.25x..1.75x]`, else
/// as [`ratio`]: the one way `replay` and `diff` write a judged ratio of medians
/// ([`crate::compare::TimingMatch`]).
pub fn ratio_with_interval(x: f64, interval: Option<(f64, f64)>) -> String {
    match interval {
        Some((low, high)) => format!("{} [{}..{}]", ratio(x), ratio(low), ratio(high)),
        None => ratio(x),
    }
}

/// Numbers (ids, in any order) as ascending runs: `4`, `1-3`, `1-3,7`: the prepared graphs
/// a pooled timing row pools ([`crate::matching::Pools`]).
pub fn id_runs(ids: &[u64]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        runs.push(if j == i {
            ids[i].to_string()
        } else {
            format!("{}-{}", ids[i], ids[j])
        });
        i = j + 1;
    }
    runs.join(",")
}

/// A tick spacing chosen by [`ruler_ticks`] and how its labels are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickSpacing {
    /// Nanoseconds between ticks (1, 2 or 5 times a power of ten).
    pub step_ns: u64,
    /// Unit scale of the labels, in ns (1, 1e3, 1e6, 1e9).
    pub unit_ns: u64,
    /// Digits after the decimal point needed to tell ticks apart.
    pub decimals: usize,
}

impl TickSpacing {
    /// The label of the tick at `t_ns`: `12.5ms`, `3.200001s`, `850ns`.
    pub fn label(&self, t_ns: u64) -> String {
        let (_, suffix) = UNITS
            .iter()
            .copied()
            .find(|&(scale, _)| scale == self.unit_ns)
            .unwrap_or(UNITS[0]);
        if self.decimals == 0 {
            format!("{}{suffix}", t_ns / self.unit_ns)
        } else {
            let whole = t_ns / self.unit_ns;
            let frac = t_ns % self.unit_ns;
            // unit_ns is a power of ten >= 10^decimals, so this division is exact for ticks.
            let digits = frac / (self.unit_ns / 10u64.pow(self.decimals as u32));
            format!("{whole}.{digits:0width$}{suffix}", width = self.decimals)
        }
    }
}

/// The smallest "nice" tick spacing (1, 2, 5 × 10^k ns) whose labels, written in the unit of
/// the window's end time, fit between ticks on a ruler of `cols` columns spanning
/// `width_ns`, leaving at least one blank column.
pub fn ruler_ticks(start_ns: u64, width_ns: u64, cols: u16) -> TickSpacing {
    let cols = u64::from(cols.max(1));
    let end_ns = start_ns.saturating_add(width_ns);
    let (unit_ns, _) = unit_for(end_ns.max(1));
    let mut magnitude = 1u64;
    loop {
        for mult in [1, 2, 5] {
            let step_ns = magnitude.saturating_mul(mult);
            let decimals = decimals_for(step_ns, unit_ns);
            let spacing = TickSpacing {
                step_ns,
                unit_ns,
                decimals,
            };
            let label_cols = spacing.label(end_ns).chars().count() as u64 + 2;
            // Columns between two ticks: step * cols / width.
            let gap = u128::from(step_ns) * u128::from(cols) / u128::from(width_ns.max(1));
            if gap >= u128::from(label_cols) || step_ns == u64::MAX {
                return spacing;
            }
        }
        magnitude = magnitude.saturating_mul(10);
    }
}

/// Decimal digits needed to write multiples of `step_ns` in units of `unit_ns`.
fn decimals_for(step_ns: u64, unit_ns: u64) -> usize {
    let mut decimals = 0;
    let mut resolution = unit_ns;
    while resolution > 1 && !step_ns.is_multiple_of(resolution) {
        resolution /= 10;
        decimals += 1;
    }
    decimals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_load_is_its_average_and_its_value_per_cpu() {
        let average = |load, cpus| host_load(Load::Average { load, cpus });
        assert_eq!(average(4.96, 2), "4.96 (2.48 per CPU on 2 CPUs)");
        assert_eq!(average(0.5, 1), "0.50 (0.50 per CPU on 1 CPU)");
        assert_eq!(average(3.0, 0), "3.00");
        assert_eq!(host_load(Load::PerCpu(2.48)), "2.48 per CPU");
    }

    #[test]
    fn plurals_of_nouns_ending_in_a_hiss_take_es() {
        assert_eq!(plural(1, "process"), "1 process");
        assert_eq!(plural(2, "process"), "2 processes");
        assert_eq!(plural(3, "batch"), "3 batches");
        assert_eq!(plural(0, "block"), "0 blocks");
    }

    #[test]
    fn durations_have_three_significant_digits() {
        assert_eq!(duration(0), "0 ns");
        assert_eq!(duration(850), "850 ns");
        assert_eq!(duration(12_345), "12.3 µs");
        assert_eq!(duration(4_560_000), "4.56 ms");
        assert_eq!(duration(1_230_000_000), "1.23 s");
        assert_eq!(duration(250_000), "250 µs");
    }

    #[test]
    fn times_and_bytes() {
        assert_eq!(time(12_345_678), "12.345678 ms");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(1536 * 1024), "1.50 MiB");
        assert_eq!(bandwidth(12.34e9), "12.3 GB/s");
    }

    #[test]
    fn bytes_side_by_side_read_in_one_form() {
        assert_eq!(bytes_alike([2520, 21 << 10]), ["2.46 KiB", "21.00 KiB"]);
        assert_eq!(bytes_alike([8 << 20, 16 << 20]), ["8 MiB", "16 MiB"]);
        assert_eq!(bytes_alike([512, 1536]), ["512 B", "1.50 KiB"]);
        assert_eq!(bytes_alike([512, 1024]), ["512 B", "1 KiB"]);
    }

    #[test]
    fn rates_have_three_significant_digits_and_a_prefix() {
        assert_eq!(rate(850.4, "records"), "850 records/s");
        assert_eq!(rate(12.34, "frames"), "12.3 frames/s");
        assert_eq!(rate(0.5, "frames"), "0.50 frames/s");
        assert_eq!(rate(0.0, "records"), "0 records/s");
        assert_eq!(rate(8_500.0, "records"), "8.50k records/s");
        assert_eq!(rate(12_400.0, "records"), "12.4k records/s");
        assert_eq!(rate(3_100_000.0, "records"), "3.10M records/s");
        assert_eq!(rate(-3.0, "records"), "0 records/s");
        assert_eq!(rate(f64::NAN, "records"), "0 records/s");
    }

    #[test]
    fn ratios_have_two_decimals_two_digits_below_a_hundredth_or_an_exponent() {
        assert_eq!(ratio(1.234), "1.23x");
        assert_eq!(ratio(0.5), "0.50x");
        assert_eq!(ratio(1e9), "1.00e9x");
        // 157 µs against 370 ns (a fresh user's `diff` of two programs read `0.00x`).
        assert_eq!(ratio(370.0 / 157_000.0), "0.0024x");
        assert_eq!(ratio(0.0123), "0.01x");
        assert_eq!(ratio(0.00999), "0.0100x");
        assert_eq!(ratio(2.4e-5), "2.40e-5x");
        assert_eq!(ratio(0.0), "0.00x");
    }

    #[test]
    fn a_judged_ratio_reads_with_its_interval() {
        assert_eq!(
            ratio_with_interval(1.5, Some((1.25, 1.75))),
            "1.50x [1.25x..1.75x]"
        );
        assert_eq!(ratio_with_interval(1.5, None), "1.50x");
    }

    #[test]
    fn ids_read_as_runs() {
        assert_eq!(id_runs(&[4]), "4");
        assert_eq!(id_runs(&[3, 1, 2]), "1-3");
        assert_eq!(id_runs(&[1, 2, 3, 7, 9, 10]), "1-3,7,9-10");
        assert_eq!(id_runs(&[]), "");
    }

    #[test]
    fn ruler_units_adapt_to_the_zoom() {
        // 10 µs over 100 columns: 1 µs ticks written in µs.
        let t = ruler_ticks(0, 10_000, 100);
        assert_eq!((t.unit_ns, t.decimals), (1_000, 0));
        assert_eq!(t.label(3_000), "3µs");
        // 2 s window: ticks in s.
        let t = ruler_ticks(0, 2_000_000_000, 100);
        assert_eq!(t.unit_ns, 1_000_000_000);
        assert!(t.step_ns >= 100_000_000);
        // Deep zoom far from zero: 3.2 s in, 1 µs wide.
        let t = ruler_ticks(3_200_000_000, 1_000, 100);
        assert_eq!(t.unit_ns, 1_000_000_000);
        let label = t.label(3_200_000_200);
        assert!(
            label.starts_with("3.2000002") && label.ends_with('s'),
            "{label}"
        );
        // Tiny windows use ns.
        let t = ruler_ticks(0, 100, 100);
        assert_eq!(t.label(20), "20ns");
    }

    #[test]
    fn labels_fit_between_ticks() {
        for width in [1u64, 17, 999, 12_345, 9_876_543, 5_000_000_000] {
            let t = ruler_ticks(1_000_000, width, 110);
            let gap = t.step_ns as f64 * 110.0 / width as f64;
            assert!(gap >= t.label(1_000_000 + width).chars().count() as f64 + 2.0);
        }
    }
}
