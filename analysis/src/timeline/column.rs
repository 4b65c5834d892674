//! Columns of fixed-size values that live either in memory (while a model is built) or in a
//! mapped file of the view cache (a model reopened with [`super::cache`]).
//!
//! A mapped column is never read into memory: the kernel pages in what a frame touches (a
//! binary search, the visible window) and may drop it again, so a model of 10M regions
//! reopens with a resident size that does not grow with the trace. Only [`Plain`] types
//! are stored: their bytes are written out as they are and read back by a cast.

use memmap2::Mmap;
use std::fs::File;
use std::io::{self, Write};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A type whose values are their bytes: `Copy`, no padding, no pointers, and every bit
/// pattern of its size is a valid value.
///
/// # Safety
///
/// Implementors guarantee: no padding bytes (every byte belongs to a field; each
/// implementation is checked by a `size_of` assertion equal to the sum of its fields),
/// every field an integer or an integer newtype, so any bytes read back make a valid value.
pub(crate) unsafe trait Plain: Copy + 'static {}

// SAFETY: integers: no padding, every bit pattern valid.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for u64 {}

/// A column of `T`: owned while built, mapped once reopened from the cache.
pub(crate) enum Column<T: Plain> {
    /// Built in this process.
    Owned(Vec<T>),
    /// A file of the view cache, `len` values of `T`.
    Mapped {
        map: Arc<Mmap>,
        len: usize,
        _type: PhantomData<T>,
    },
}

impl<T: Plain> Column<T> {
    /// The values as a growable vector (a mapped column is copied into memory first).
    pub(crate) fn vec_mut(&mut self) -> &mut Vec<T> {
        if let Column::Mapped { .. } = self {
            *self = Column::Owned(self.to_vec());
        }
        match self {
            Column::Owned(v) => v,
            Column::Mapped { .. } => unreachable!("converted above"),
        }
    }

    /// Heap bytes held (a mapped column holds none).
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Column::Owned(v) => v.capacity() * size_of::<T>(),
            Column::Mapped { .. } => 0,
        }
    }

    /// Whether the values are mapped from the cache rather than held.
    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self, Column::Mapped { .. })
    }

    /// Writes the values' bytes to `out`.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        let values: &[T] = self;
        // SAFETY: `T: Plain` has no padding, so every byte of the slice is initialised;
        // the length is the slice's size in bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values))
        };
        out.write_all(bytes)
    }

    /// Maps `file`, which holds `len` values of `T` as [`Column::write_to`] wrote them.
    ///
    /// # Errors
    ///
    /// An I/O error when the file cannot be mapped, or `InvalidData` when its length is
    /// not `len` values.
    ///
    /// # Safety
    ///
    /// The file must not be truncated or written while the column lives (a cache file is
    /// written once, under a fresh name, then renamed into place and only read).
    pub(crate) unsafe fn map(file: &File, len: usize) -> io::Result<Column<T>> {
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "column too long"))?;
        if file.metadata()?.len() != bytes as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "column file has the wrong length",
            ));
        }
        if len == 0 {
            return Ok(Column::Owned(Vec::new()));
        }
        drop_cached_pages(file);
        // SAFETY: the caller guarantees nobody changes the file while it is mapped.
        let map = unsafe { Mmap::map(file)? };
        // Frames read a few entries here and there (binary searches, cell edges): no
        // read-ahead, so a fault brings in the page it needs.
        #[cfg(unix)]
        map.advise(memmap2::Advice::Random)?;
        if !(map.as_ptr() as usize).is_multiple_of(align_of::<T>()) {
            return Err(io::Error::other("column map is not aligned"));
        }
        Ok(Column::Mapped {
            map: Arc::new(map),
            len,
            _type: PhantomData,
        })
    }
}

/// Drops the page cache's clean pages of `file` (Linux).
///
/// Why: the kernel keeps a file's cached pages in large folios (ext4 and xfs on Linux 6.x,
/// up to 2 MiB each) and maps a whole folio on a fault, so a frame that reads 600 pages of
/// a cached column would count 400 MiB as resident. Dropped first and mapped without
/// read-ahead, a column is read back page by page, and what is resident is what frames
/// touched. Dirty pages stay (the cache writer syncs its files first, see
/// [`super::cache`]); failing is harmless (the pages stay cached).
pub(crate) fn drop_cached_pages(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: posix_fadvise on a descriptor this process holds open; no memory is
        // passed.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

impl<T: Plain> Deref for Column<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Column::Owned(v) => v,
            // SAFETY: the map holds `len * size_of::<T>()` bytes (checked in `map`), is
            // aligned for `T` (checked in `map`; maps are page-aligned), lives as long as
            // `self`, and every bit pattern is a valid `T` (`Plain`).
            Column::Mapped { map, len, .. } => unsafe {
                std::slice::from_raw_parts(map.as_ptr().cast::<T>(), *len)
            },
        }
    }
}

impl<T: Plain> DerefMut for Column<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.vec_mut()
    }
}

impl<T: Plain> Default for Column<T> {
    fn default() -> Column<T> {
        Column::Owned(Vec::new())
    }
}

impl<T: Plain> Clone for Column<T> {
    fn clone(&self) -> Column<T> {
        match self {
            Column::Owned(v) => Column::Owned(v.clone()),
            Column::Mapped { map, len, .. } => Column::Mapped {
                map: Arc::clone(map),
                len: *len,
                _type: PhantomData,
            },
        }
    }
}

impl<T: Plain> From<Vec<T>> for Column<T> {
    fn from(v: Vec<T>) -> Column<T> {
        Column::Owned(v)
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for Column<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Column::Owned(v) => write!(f, "Column::Owned({} values)", v.len()),
            Column::Mapped { len, .. } => write!(f, "Column::Mapped({len} values)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Seek;

    #[test]
    fn a_written_column_maps_back_equal_and_refuses_a_wrong_length() {
        let column: Column<u64> = vec![1, 2, u64::MAX].into();
        let mut file = tempfile::tempfile().unwrap();
        column.write_to(&mut file).unwrap();
        file.rewind().unwrap();
        // SAFETY: a temporary file only this test holds.
        let mapped = unsafe { Column::<u64>::map(&file, 3) }.unwrap();
        assert!(mapped.is_mapped());
        assert_eq!(&*mapped, &[1, 2, u64::MAX]);
        assert_eq!(mapped.heap_bytes(), 0);
        // SAFETY: as above.
        let wrong = unsafe { Column::<u64>::map(&file, 4) };
        assert_eq!(wrong.unwrap_err().kind(), io::ErrorKind::InvalidData);
        let mut owned = mapped.clone();
        owned.vec_mut().push(7);
        assert_eq!(&*owned, &[1, 2, u64::MAX, 7]);
        assert!(!owned.is_mapped() && mapped.is_mapped());
    }
}
