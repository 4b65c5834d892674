//! The synchronization primitives of the completion protocol, from `std` or from loom.
//!
//! Without the `model-check` feature these are plain re-exports of `std`'s types: the same
//! types, the same code, no wrapper. With it they are loom's, so the tests in
//! `completion::model_check` explore every schedule (and the weak memory orderings loom
//! models) of the real [`super::completion`] code. A runtime built with the feature cannot
//! run outside `loom::model`; the feature exists only for
//! `cargo test -p hrx --lib --features model-check model_check`.
//!
//! The signal's `Arc` stays `std`'s in both builds ([`super::completion::Signal::new`]):
//! prepared graphs hold their slots' signals in `std::sync::Arc`s. Under loom its count is
//! read at loom's schedule points like any other state, not modelled as an atomic.

#[cfg(not(feature = "model-check"))]
#[allow(unused_imports)] // the facade's full set; the protocol uses part of it
pub(crate) use std::sync::{
    Arc, Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
};

#[cfg(feature = "model-check")]
#[allow(unused_imports)] // the facade's full set; the protocol uses part of it
pub(crate) use loom::sync::{
    Arc, Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
};

/// Locks `mutex`, ignoring poisoning (as [`crate::buffer::lock`] does for `std`'s).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
