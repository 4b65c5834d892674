//! The contract checks the graph builder runs on a kernel's bindings (extents, aliasing of
//! written bindings, alignment), over [`BufferView`]s.

use super::KernelContract;
use crate::error::BindingError;
use crate::{BufferView, Result};

impl KernelContract {
    /// Checks extents and that no written binding overlaps another binding.
    ///
    /// # Errors
    /// [`BindingError::Count`], [`BindingError::TooShort`] and
    /// [`BindingError::AliasedWrite`], wrapped in [`crate::Error::Binding`].
    pub fn check(&self, bindings: &[BufferView]) -> Result<()> {
        self.check_extents(bindings)?;
        for (i, a) in bindings.iter().enumerate() {
            for (j, b) in bindings.iter().enumerate().skip(i + 1) {
                let (access_a, access_b) = (self.bindings[i].access, self.bindings[j].access);
                if (access_a.writes() || access_b.writes()) && a.conflicts(b) {
                    let (written, other) = if access_a.writes() { (i, j) } else { (j, i) };
                    let start = a.offset().max(b.offset());
                    let end = (a.offset() + a.len()).min(b.offset() + b.len());
                    return Err(BindingError::AliasedWrite {
                        written,
                        written_access: self.bindings[written].access,
                        other,
                        other_access: self.bindings[other].access,
                        buffer: a.buffer().id(),
                        range: start..end,
                    }
                    .into());
                }
            }
        }
        Ok(())
    }

    /// Checks the binding count and that each view covers its extent.
    ///
    /// # Errors
    /// [`BindingError::Count`] and [`BindingError::TooShort`].
    pub fn check_extents(&self, bindings: &[BufferView]) -> Result<()> {
        if bindings.len() != self.bindings.len() {
            return Err(BindingError::Count {
                expected: self.bindings.len(),
                actual: bindings.len(),
            }
            .into());
        }
        for (index, (view, contract)) in bindings.iter().zip(&self.bindings).enumerate() {
            if view.len() < contract.extent_bytes {
                return Err(BindingError::TooShort {
                    index,
                    len_bytes: view.len(),
                    extent_bytes: contract.extent_bytes,
                }
                .into());
            }
        }
        Ok(())
    }

    /// Checks `address` (allocation address plus view offset) of binding `index`, in the
    /// `allocation` (`"GPU"` or `"NPU"`) the kernel runs on.
    pub(crate) fn check_alignment(
        &self,
        index: usize,
        allocation: &'static str,
        address: u64,
    ) -> Result<()> {
        let alignment = self.bindings[index].alignment;
        if !address.is_multiple_of(alignment as u64) {
            return Err(BindingError::Misaligned {
                index,
                allocation,
                address,
                alignment,
            }
            .into());
        }
        Ok(())
    }
}
