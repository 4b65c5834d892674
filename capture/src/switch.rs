//! How every `HRX_` switch variable reads (`0`, `1`, or empty for its default), for the
//! runtime's switches and the viewer's alike, and the one shape a bad value of any `HRX_`
//! variable is said in ([`bad_value`]), so that each says it in the same words.

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
        Some((other, _)) => Err(bad_value(name, "0 or 1", other, None)),
    }
}

/// The line a bad value `value` of variable `name` reads: `NAME: expected EXPECTED, got
/// "value"`, then `: WHY` where the parser has a reason more specific than `expected`
/// (`HRX_FAULT: expected ..., got "op=0:device-lost": the count must be a whole number from
/// 1`).
pub fn bad_value(
    name: &str,
    expected: &str,
    value: &(impl std::fmt::Debug + ?Sized),
    why: Option<&str>,
) -> String {
    match why {
        Some(why) => format!("{name}: expected {expected}, got {value:?}: {why}"),
        None => format!("{name}: expected {expected}, got {value:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_value_names_the_variable_first_and_keeps_the_reason() {
        assert_eq!(
            bad_value("HRX_X", "a or b", "c", None),
            "HRX_X: expected a or b, got \"c\""
        );
        assert_eq!(
            bad_value("HRX_X", "a or b", "c\n", Some("too short")),
            "HRX_X: expected a or b, got \"c\\n\": too short"
        );
        assert_eq!(
            switch_value("HRX_X", Some("yes".as_ref())),
            Err("HRX_X: expected 0 or 1, got \"yes\"".to_owned())
        );
    }
}
