//! Re-execution of captured hrx pipelines (see `../shared/DESIGN.md` section 5).
#![warn(missing_docs)]
