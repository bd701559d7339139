//! The `.npy` header (NumPy's format description, `numpy/lib/format.py`, versions 1.0–3.0).
//!
//! # Contract
//! 1. A file is a `.npy` if and only if it starts with the magic `\x93NUMPY`.
//! 2. Versions 1.x (2-byte header length) and 2.x/3.x (4-byte header length) are read; any other
//!    major version is an error naming it.
//! 3. The header dict must have `descr` (a plain dtype string such as `<f8`, `>i4`, `|u1`; `=`
//!    means this machine's order), `fortran_order` (bool) and `shape` (tuple of non-negative
//!    ints); anything else is a [`Error::NpyHeader`] with the byte offset of the fault.
//! 4. Dtypes other than f2, f4, f8, i1–i8 and u1–u8 (object, bool, complex, strings,
//!    datetimes, structured) are [`Error::UnsupportedDtype`] for [`read_header`]. A kernel
//!    with element types of its own (the FFT's complex128) reads the header with
//!    [`read_header_as`] and its own [`NpyDtype`]; rules 1–3 and 5 hold alike.
//! 5. A file shorter than header plus `product(shape) × itemsize` is
//!    [`Error::NpyTruncated`]; bytes after the data are ignored, as `numpy.load` does.
//!
//! # Modules
//! - `parse`: the header dict (a Python literal) and the descr string (rules 3 and 4).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::{Dtype, Error};

mod parse;

pub use parse::parse_descr;
use parse::parse_dict;

/// The magic string every `.npy` file starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Headers longer than this are refused (NumPy itself refuses more than 10 000 bytes by default).
pub const MAX_HEADER_BYTES: usize = 16 << 20;

/// An element type a `.npy` descr can name (rule 4): [`Dtype`], or a kernel's own.
pub trait NpyDtype: Sized {
    /// Parses a descr string such as `<f8`; errors name `path`.
    fn from_descr(path: &Path, descr: &str) -> Result<Self, Error>;
    /// Bytes per element.
    fn itemsize(&self) -> usize;
}

impl NpyDtype for Dtype {
    fn from_descr(path: &Path, descr: &str) -> Result<Dtype, Error> {
        parse_descr(path, descr)
    }
    fn itemsize(&self) -> usize {
        Dtype::itemsize(*self)
    }
}

/// What a `.npy` header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader<D = Dtype> {
    /// Format version (major, minor).
    pub version: (u8, u8),
    /// The descr as written (`<f8`).
    pub descr: String,
    /// The element type.
    pub dtype: D,
    /// True if and only if the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The shape; `[]` for a 0-d array (one element).
    pub shape: Vec<u64>,
    /// Byte offset of the first data byte.
    pub data_offset: u64,
    /// Number of elements, the product of the shape.
    pub count: u64,
}

impl<D: NpyDtype> NpyHeader<D> {
    /// Bytes of data the header promises.
    pub fn data_len(&self) -> u64 {
        self.count * self.dtype.itemsize() as u64
    }
}

/// Returns true if and only if `prefix` starts with the `.npy` magic (rule 1).
pub fn has_magic(prefix: &[u8]) -> bool {
    prefix.starts_with(MAGIC)
}

/// Reads and checks the header of the `.npy` file at `path` (rules 2–5).
pub fn read_header(path: &Path) -> Result<NpyHeader, Error> {
    read_header_as(path)
}

/// [`read_header`] for the element types `D` parses (rule 4).
pub fn read_header_as<D: NpyDtype>(path: &Path) -> Result<NpyHeader<D>, Error> {
    let open_err = |source| Error::Open { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(open_err)?;
    let file_len = file.metadata().map_err(open_err)?.len();
    read_header_from(path, file, file_len)
}

/// [`read_header_as`] of the file `path` names, read from `file` (positioned at its start) and
/// `file_len` bytes long: the fuzz harness parses headers in memory with it.
pub fn read_header_from<D: NpyDtype>(
    path: &Path,
    mut file: impl Read,
    file_len: u64,
) -> Result<NpyHeader<D>, Error> {
    let open_err = |source| Error::Open { path: path.to_path_buf(), source };
    let mut prefix = Vec::with_capacity(12);
    (&mut file).take(12).read_to_end(&mut prefix).map_err(open_err)?;
    let header_len_at = |len_bytes: usize| -> Result<(usize, usize), Error> {
        let start = 8 + len_bytes;
        if prefix.len() < start {
            return Err(bad(
                path,
                prefix.len() as u64,
                "truncated header (file ends in the preamble)",
            ));
        }
        let len = if len_bytes == 2 {
            u16::from_le_bytes([prefix[8], prefix[9]]) as usize
        } else {
            u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as usize
        };
        Ok((start, len))
    };
    if !has_magic(&prefix) {
        return Err(bad(path, 0, "no \\x93NUMPY magic"));
    }
    if prefix.len() < 8 {
        return Err(bad(path, prefix.len() as u64, "truncated header (file ends in the preamble)"));
    }
    let version = (prefix[6], prefix[7]);
    let (start, len) = match version.0 {
        1 => header_len_at(2)?,
        2 | 3 => header_len_at(4)?,
        v => return Err(bad(path, 6, &format!("unsupported format version {v}.{}", version.1))),
    };
    if len > MAX_HEADER_BYTES {
        return Err(bad(path, 8, &format!("header length {len} exceeds {MAX_HEADER_BYTES}")));
    }
    if (start + len) as u64 > file_len {
        return Err(bad(
            path,
            file_len,
            &format!(
                "truncated header: it needs bytes up to {}, the file has {file_len}",
                start + len
            ),
        ));
    }
    let mut text = prefix[start.min(prefix.len())..].to_vec();
    // `prefix` may already hold more than the header (a short header in a long probe).
    let missing = (start + len).saturating_sub(prefix.len().max(start));
    (&mut file).take(missing as u64).read_to_end(&mut text).map_err(open_err)?;
    text.truncate(len);
    if text.len() < len {
        return Err(bad(path, (start + text.len()) as u64, "truncated header"));
    }
    let header = parse_dict(path, &text, start as u64, version)?;
    let header = NpyHeader { data_offset: (start + len) as u64, ..header };
    let available = file_len - header.data_offset;
    if available < header.data_len() {
        return Err(Error::NpyTruncated {
            path: path.to_path_buf(),
            shape: header.shape.clone(),
            descr: header.descr.clone(),
            data_offset: header.data_offset,
            expected: header.data_len(),
            actual: available,
        });
    }
    Ok(header)
}

fn bad(path: &Path, offset: u64, reason: &str) -> Error {
    Error::NpyHeader { path: path.to_path_buf(), offset, reason: reason.to_string() }
}

/// Writes a version 1.0 `.npy` header for `dtype` and `shape` (C order), padded as NumPy pads it.
/// Tests and the demo use it to make inputs.
pub fn write_header(dtype: Dtype, shape: &[u64], fortran_order: bool) -> Vec<u8> {
    sluice_io::npy_header(&format!("'{}'", dtype.descr()), shape, fortran_order)
}

#[cfg(test)]
mod tests;
