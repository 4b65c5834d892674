//! Terminal timeline of hrx traces (see `../shared/DESIGN.md` section 6).
#![warn(missing_docs)]
