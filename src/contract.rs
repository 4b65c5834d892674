//! Kernel contracts: what each argument binding may touch.
//!
//! A contract lists one [`BindingContract`] per kernel argument (access, the extent the
//! kernel touches from the view's first byte, the base alignment it assumes) and the
//! kernel's constant bytes. [`crate::Graph::gpu`] checks every binding against it before
//! an operation enters a graph ([`KernelContract::check`], in `check.rs`); a backend never
//! re-validates.
//!
//! This file holds the types only and imports nothing above [`Access`]: the kernel library
//! (`kernels/`), and through it the pure backends (`gpu/`, `npu/`), name contracts, so a
//! contract must not pull in buffers (and through them the runtime). The checks over
//! [`crate::BufferView`]s live in `check.rs`, which nothing below the graph builder imports.

use crate::Access;

mod check;

/// The contract of one kernel argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingContract {
    /// How the kernel uses the bound range.
    pub access: Access,
    /// Bytes the kernel touches from the view's first byte; the view must be at least this long.
    pub extent_bytes: usize,
    /// Required alignment in bytes of allocation address plus view offset (a power of two).
    pub alignment: usize,
}

impl BindingContract {
    /// A binding of `extent_bytes` with `access`, aligned to `alignment` bytes.
    pub fn new(access: Access, extent_bytes: usize, alignment: usize) -> Self {
        Self {
            access,
            extent_bytes,
            alignment: alignment.max(1),
        }
    }
}

/// A kernel's fixed argument contract: one binding per argument, and constant bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelContract {
    /// One entry per argument, in argument order.
    pub bindings: Vec<BindingContract>,
    /// Constant bytes passed by value after the bindings (little-endian, packed).
    pub constants: Vec<u8>,
}
