//! Trace schema, writer and reader for hrx (see `../shared/DESIGN.md` section 4).
#![warn(missing_docs)]
