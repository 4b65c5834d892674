//! How every `HRX_` switch variable reads (`0`, `1`, or empty for its default;
//! [`hrx_capture::switch::switch_value`], which the viewer's switches use too): a leaf below
//! the runtime's options and the modules that read their own variable when first used
//! (`huge_pages`), so that each says a bad value in the same words.

pub(crate) use hrx_capture::switch::switch_value;

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
