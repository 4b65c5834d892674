//! How every `HRX_` switch variable reads (`0`, `1`, or empty for its default): a leaf below
//! the runtime's options and the modules that read their own variable when first used
//! (`huge_pages`), so that each says a bad value in the same words.

/// An `HRX_` switch, variable `name`, of value `value` (`None`: unset): `Some(true)` for `1`,
/// `Some(false)` for `0`, `None` when empty or unset.
///
/// # Errors
/// The line naming the variable, for anything but `0`, `1` or empty.
pub(crate) fn switch_value(
    name: &str,
    value: Option<&std::ffi::OsStr>,
) -> Result<Option<bool>, String> {
    match value.map(|v| (v, v.to_str())) {
        Some((_, Some("1"))) => Ok(Some(true)),
        Some((_, Some("0"))) => Ok(Some(false)),
        None | Some((_, Some(""))) => Ok(None),
        Some((other, _)) => Err(format!("{name}: expected 0 or 1, got {other:?}")),
    }
}

/// Environment variable: `1` says why `auto` skipped a backend (on standard error), `0`,
/// empty or unset says nothing. Checked as the runtime starts (`RuntimeOptions::resolve`).
pub(crate) const VERBOSE_ENV: &str = "HRX_VERBOSE";

/// Whether [`VERBOSE_ENV`] is `1` (any non-empty value was on, `0` included: a break-it
/// pass). A bad value is off here: the runtime refused it as it started.
#[cfg_attr(
    not(any(feature = "cuda", feature = "hip", feature = "xrt")),
    allow(dead_code)
)]
pub(crate) fn verbose() -> bool {
    switch_value(VERBOSE_ENV, std::env::var_os(VERBOSE_ENV).as_deref()) == Ok(Some(true))
}
