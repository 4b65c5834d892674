//! Fixed-size values spilled to files and read back sorted with bounded memory: what the
//! streaming index builder ([`super::stream`]) keeps on disk instead of in memory.
//!
//! A [`Spill`] appends [`Plain`] values through a buffered writer; [`sorted`] reads one or
//! more spills back in key order as an external merge sort:
//!
//! ```text
//! spill file   [ sorted prefix ............ | rest ........................ ]
//! runs         [ run 0: the prefix, in place ][ run 1: chunk, sorted ][ run 2 ] ...
//! merge        k-way by (key, run), so equal keys keep their order of arrival
//! ```
//!
//! The values of a lane arrive almost in start order, so the usual spill is one sorted
//! prefix (read twice, never copied) and perhaps a short unsorted tail (the spans placed
//! when the index is finished). Memory is one chunk of [`CHUNK_BYTES`] while runs are made,
//! then one buffered reader per run. Files are read and written, never mapped, so nothing
//! of them counts towards the process's resident size (the page cache holds them).

use super::column::Plain;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of values sorted in memory at once when a spill is not in order.
pub(crate) const CHUNK_BYTES: usize = 32 << 20;

/// Buffer of each spill writer and run reader.
const BUFFER_BYTES: usize = 256 << 10;

/// The bytes of a plain value.
pub(crate) fn bytes_of<T: Plain>(value: &T) -> &[u8] {
    // SAFETY: `T: Plain` has no padding, so all `size_of::<T>()` bytes are initialised.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }
}

/// A plain value from its bytes (`bytes.len() == size_of::<T>()`).
pub(crate) fn value_of<T: Plain>(bytes: &[u8]) -> T {
    debug_assert_eq!(bytes.len(), size_of::<T>());
    // SAFETY: the slice holds `size_of::<T>()` bytes (asserted by the callers' buffers),
    // read unaligned; every bit pattern is a valid `T` (`Plain`).
    unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) }
}

/// Values appended to a file.
pub(crate) struct Spill<T: Plain> {
    out: BufWriter<File>,
    path: PathBuf,
    len: u64,
    _type: PhantomData<T>,
}

impl<T: Plain> Spill<T> {
    /// A new, empty file at `path`.
    pub(crate) fn create(path: PathBuf) -> io::Result<Spill<T>> {
        Ok(Spill {
            out: BufWriter::with_capacity(BUFFER_BYTES, File::create(&path)?),
            path,
            len: 0,
            _type: PhantomData,
        })
    }

    /// Appends `value`.
    pub(crate) fn push(&mut self, value: &T) -> io::Result<()> {
        self.len += 1;
        self.out.write_all(bytes_of(value))
    }

    /// Values appended so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Flushes the file and returns what was written.
    pub(crate) fn finish(self) -> io::Result<SpillFile<T>> {
        self.out.into_inner().map_err(|e| e.into_error())?;
        Ok(SpillFile {
            path: self.path,
            len: self.len,
            _type: PhantomData,
        })
    }
}

/// A finished spill: `len` values of `T` in the file at `path`.
pub(crate) struct SpillFile<T: Plain> {
    pub(crate) path: PathBuf,
    pub(crate) len: u64,
    _type: PhantomData<T>,
}

/// `count` values of a file from value `from` on, in file order.
pub(crate) struct Values<T: Plain> {
    input: BufReader<File>,
    left: u64,
    buffer: Vec<u8>,
    _type: PhantomData<T>,
}

impl<T: Plain> Values<T> {
    /// Values `from..from + count` of the file at `path`.
    pub(crate) fn open(path: &Path, from: u64, count: u64) -> io::Result<Values<T>> {
        let mut file = File::open(path)?;
        file.seek(SeekFrom::Start(from * size_of::<T>() as u64))?;
        Ok(Values {
            input: BufReader::with_capacity(BUFFER_BYTES, file),
            left: count,
            buffer: vec![0; size_of::<T>()],
            _type: PhantomData,
        })
    }

    /// Every value of `spill`.
    pub(crate) fn all(spill: &SpillFile<T>) -> io::Result<Values<T>> {
        Values::open(&spill.path, 0, spill.len)
    }
}

impl<T: Plain> Iterator for Values<T> {
    type Item = io::Result<T>;

    fn next(&mut self) -> Option<io::Result<T>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(
            self.input
                .read_exact(&mut self.buffer)
                .map(|()| value_of(&self.buffer)),
        )
    }
}

/// The values of `spills` (in this order) sorted by `key`, stably: values with equal keys
/// come in the order they were appended, the first spill's before the second's. Runs of
/// unsorted parts are written as files `run-N` into `scratch`, removed when the result is
/// dropped.
///
/// # Errors
///
/// An I/O error reading the spills or writing the runs.
pub(crate) fn sorted<T: Plain, K: Ord, F: Fn(&T) -> K>(
    spills: &[&SpillFile<T>],
    key: F,
    scratch: &Path,
) -> io::Result<Merge<T, K, F>> {
    sorted_in_chunks(spills, key, scratch, CHUNK_BYTES)
}

/// [`sorted`], sorting at most `chunk_bytes` of values in memory at once.
fn sorted_in_chunks<T: Plain, K: Ord, F: Fn(&T) -> K>(
    spills: &[&SpillFile<T>],
    key: F,
    scratch: &Path,
    chunk_bytes: usize,
) -> io::Result<Merge<T, K, F>> {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let chunk = (chunk_bytes / size_of::<T>().max(1)).max(1);
    let mut runs: Vec<(PathBuf, u64, u64)> = Vec::new();
    let mut written = Vec::new();
    for spill in spills {
        // The sorted prefix stays where it is.
        let mut prefix = 0;
        let mut last: Option<K> = None;
        for value in Values::all(spill)? {
            let k = key(&value?);
            if last.as_ref().is_some_and(|l| *l > k) {
                break;
            }
            last = Some(k);
            prefix += 1;
        }
        if prefix > 0 {
            runs.push((spill.path.clone(), 0, prefix));
        }
        let mut rest = Values::<T>::open(&spill.path, prefix, spill.len - prefix)?;
        let mut values = Vec::new();
        loop {
            values.clear();
            for value in rest.by_ref().take(chunk) {
                values.push(value?);
            }
            if values.is_empty() {
                break;
            }
            values.sort_by_key(&key);
            let path = scratch.join(format!("run-{}", RUNS.fetch_add(1, Ordering::Relaxed)));
            let mut out = BufWriter::with_capacity(BUFFER_BYTES, File::create(&path)?);
            for v in &values {
                out.write_all(bytes_of(v))?;
            }
            out.into_inner().map_err(|e| e.into_error())?;
            runs.push((path.clone(), 0, values.len() as u64));
            written.push(path);
        }
    }
    let mut inputs = Vec::with_capacity(runs.len());
    let mut heads = BinaryHeap::with_capacity(runs.len());
    let mut pending = Vec::with_capacity(runs.len());
    for (i, (path, from, count)) in runs.iter().enumerate() {
        let mut values = Values::<T>::open(path, *from, *count)?;
        let first = values.next().transpose()?;
        if let Some(v) = &first {
            heads.push(Reverse((key(v), i)));
        }
        pending.push(first);
        inputs.push(values);
    }
    Ok(Merge {
        inputs,
        pending,
        heads,
        key,
        written,
    })
}

/// The merge of sorted runs (see [`sorted`]).
pub(crate) struct Merge<T: Plain, K: Ord, F: Fn(&T) -> K> {
    inputs: Vec<Values<T>>,
    /// The next value of each run, taken from its input.
    pending: Vec<Option<T>>,
    /// (key of the pending value, run): the smallest first, the earlier run on ties.
    heads: BinaryHeap<Reverse<(K, usize)>>,
    key: F,
    written: Vec<PathBuf>,
}

impl<T: Plain, K: Ord, F: Fn(&T) -> K> Iterator for Merge<T, K, F> {
    type Item = io::Result<T>;

    fn next(&mut self) -> Option<io::Result<T>> {
        let Reverse((_, run)) = self.heads.pop()?;
        let value = self.pending[run].take()?;
        match self.inputs[run].next().transpose() {
            Ok(Some(next)) => {
                self.heads.push(Reverse(((self.key)(&next), run)));
                self.pending[run] = Some(next);
            }
            Ok(None) => {}
            Err(error) => return Some(Err(error)),
        }
        Some(Ok(value))
    }
}

impl<T: Plain, K: Ord, F: Fn(&T) -> K> Drop for Merge<T, K, F> {
    fn drop(&mut self) {
        for path in &self.written {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spill(dir: &Path, name: &str, values: &[u64]) -> SpillFile<u64> {
        let mut s = Spill::create(dir.join(name)).unwrap();
        for v in values {
            s.push(v).unwrap();
        }
        s.finish().unwrap()
    }

    #[test]
    fn spills_merge_sorted_and_stable_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        // Sorted prefix, then an unsorted tail longer than a chunk would be for tiny
        // values: the low 8 bits are a tag that the key ignores, so stability shows.
        let n = 10_000;
        let mut first: Vec<u64> = (0..n).map(|i| (i / 3) << 8).collect();
        first.extend((0..n).map(|i| (((i * 7919) % n) << 8) | 1));
        let second: Vec<u64> = (0..50).map(|i| ((50 - i) << 8) | 2).collect();
        let a = spill(dir.path(), "a", &first);
        let b = spill(dir.path(), "b", &second);
        // Chunks of 1,000 values: the tail makes ten runs.
        let merged: Vec<u64> = sorted_in_chunks(&[&a, &b], |v| *v >> 8, dir.path(), 8_000)
            .unwrap()
            .collect::<io::Result<_>>()
            .unwrap();
        let mut expected: Vec<u64> = first.iter().chain(&second).copied().collect();
        expected.sort_by_key(|v| *v >> 8);
        assert_eq!(merged, expected);
        // The runs written for the unsorted parts are gone with the merge.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2);
    }
}
