//! How every `HRX_` switch variable reads (`0`, `1`, or empty for its default), for the
//! runtime's switches and the viewer's alike, so that each says a bad value in the same
//! words.

/// An `HRX_` switch, variable `name`, of value `value` (`None`: unset): `Some(true)` for `1`,
/// `Some(false)` for `0`, `None` when empty or unset.
///
/// # Errors
/// The line naming the variable, for anything but `0`, `1` or empty.
pub fn switch_value(name: &str, value: Option<&std::ffi::OsStr>) -> Result<Option<bool>, String> {
    match value.map(|v| (v, v.to_str())) {
        Some((_, Some("1"))) => Ok(Some(true)),
        Some((_, Some("0"))) => Ok(Some(false)),
        None | Some((_, Some(""))) => Ok(None),
        Some((other, _)) => Err(format!("{name}: expected 0 or 1, got {other:?}")),
    }
}
