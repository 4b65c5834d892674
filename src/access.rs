//! How an operation uses a byte range: a leaf of the runtime's layers (errors, contracts,
//! hazards and buffers all speak of it).

/// How an operation uses a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// The range is only read.
    Read,
    /// The range is only written (its previous contents are not read).
    Write,
    /// The range is read and written.
    ReadWrite,
}

impl Access {
    /// Whether the access reads.
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }
    /// Whether the access writes.
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
    /// The access that covers both.
    pub fn union(self, other: Access) -> Access {
        if self == other {
            self
        } else {
            Access::ReadWrite
        }
    }
    /// Whether two uses of intersecting ranges must be ordered (at least one writes).
    pub fn conflicts_with(self, other: Access) -> bool {
        self.writes() || other.writes()
    }
}
