//! The `.npy` header (NumPy's format description, `numpy/lib/format.py`, versions 1.0–3.0).
//!
//! # Contract
//! 1. A file is a `.npy` if and only if it starts with the magic `\x93NUMPY`.
//! 2. Versions 1.x (2-byte header length) and 2.x/3.x (4-byte header length) are read; any other
//!    major version is an error naming it.
//! 3. The header dict must have `descr` (a plain dtype string such as `<f8`, `>i4`, `|u1`; `=`
//!    means this machine's order), `fortran_order` (bool) and `shape` (tuple of non-negative
//!    ints); anything else is a [`Error::NpyHeader`] with the byte offset of the fault.
//! 4. Dtypes other than f4, f8, i1–i8 and u1–u8 (object, bool, complex, float16, strings,
//!    datetimes, structured) are [`Error::UnsupportedDtype`] for [`read_header`]. A kernel
//!    with element types of its own (the FFT's complex128) reads the header with
//!    [`read_header_as`] and its own [`NpyDtype`]; rules 1–3 and 5 hold alike.
//! 5. A file shorter than header plus `product(shape) × itemsize` is
//!    [`Error::NpyTruncated`]; bytes after the data are ignored, as `numpy.load` does.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{Dtype, Endian, Error, Scalar};

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
    let mut file = File::open(path).map_err(open_err)?;
    let file_len = file.metadata().map_err(open_err)?.len();
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

/// A Python literal, as far as `.npy` headers use them.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Str(String),
    Bool(bool),
    None,
    Int(i128),
    Seq(Vec<Lit>, bool),
    Dict(Vec<(Lit, Lit)>),
}

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
    base: u64,
    path: &'a Path,
}

impl Parser<'_> {
    fn err(&self, reason: &str) -> Error {
        bad(self.path, self.base + self.pos as u64, reason)
    }
    fn skip_ws(&mut self) {
        while self.pos < self.text.len() && self.text[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.text.get(self.pos).copied()
    }
    fn expect(&mut self, c: u8) -> Result<(), Error> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected {:?}", c as char)))
        }
    }
    fn value(&mut self) -> Result<Lit, Error> {
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                self.pos += 1;
                let start = self.pos;
                while self.pos < self.text.len() && self.text[self.pos] != q {
                    if self.text[self.pos] == b'\\' {
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                if self.pos >= self.text.len() {
                    return Err(self.err("unterminated string"));
                }
                let s = String::from_utf8_lossy(&self.text[start..self.pos]).into_owned();
                self.pos += 1;
                Ok(Lit::Str(s))
            }
            Some(open @ (b'(' | b'[')) => {
                self.pos += 1;
                let close = if open == b'(' { b')' } else { b']' };
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(close) {
                        self.pos += 1;
                        return Ok(Lit::Seq(items, open == b'('));
                    }
                    items.push(self.value()?);
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(c) if c == close => {}
                        _ => return Err(self.err("expected ',' or a closing bracket")),
                    }
                }
            }
            Some(b'{') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        return Ok(Lit::Dict(items));
                    }
                    let k = self.value()?;
                    self.expect(b':')?;
                    let v = self.value()?;
                    items.push((k, v));
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {}
                        _ => return Err(self.err("expected ',' or '}'")),
                    }
                }
            }
            Some(c) if c.is_ascii_digit() || c == b'-' => {
                let start = self.pos;
                self.pos += 1;
                while self.pos < self.text.len() && self.text[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                let digits = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("");
                let n = digits.parse::<i128>().map_err(|_| self.err("bad integer"))?;
                // Python 2 wrote longs as `3L`.
                if self.text.get(self.pos) == Some(&b'L') {
                    self.pos += 1;
                }
                Ok(Lit::Int(n))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self.pos < self.text.len() && self.text[self.pos].is_ascii_alphanumeric() {
                    self.pos += 1;
                }
                match &self.text[start..self.pos] {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    b"None" => Ok(Lit::None),
                    _ => {
                        self.pos = start;
                        Err(self.err("unexpected word"))
                    }
                }
            }
            Some(_) => Err(self.err("unexpected character")),
            None => Err(self.err("header ends early")),
        }
    }
}

/// Parses the header dict (rule 3); `base` is the file offset of `text[0]`.
fn parse_dict<D: NpyDtype>(
    path: &Path,
    text: &[u8],
    base: u64,
    version: (u8, u8),
) -> Result<NpyHeader<D>, Error> {
    let mut p = Parser { text, pos: 0, base, path };
    let Lit::Dict(items) = p.value()? else {
        return Err(bad(path, base, "the header is not a dict"));
    };
    // NumPy's `literal_eval` keeps the last of two equal keys, this parser the first: a
    // repeated key is ambiguous and refused (issue 17).
    for (i, (k, _)) in items.iter().enumerate() {
        if items[..i].iter().any(|(seen, _)| seen == k) {
            let name = match k {
                Lit::Str(s) => format!("'{s}'"),
                other => format!("{other:?}"),
            };
            return Err(bad(path, base, &format!("the header repeats the key {name}")));
        }
    }
    let get = |key: &str| items.iter().find(|(k, _)| *k == Lit::Str(key.into())).map(|(_, v)| v);
    let descr = match get("descr") {
        Some(Lit::Str(s)) => s.clone(),
        Some(Lit::Seq(..)) => {
            return Err(Error::UnsupportedDtype {
                path: path.to_path_buf(),
                descr: "structured".into(),
                reason: "structured (record) arrays are not supported".into(),
            });
        }
        Some(_) => return Err(bad(path, base, "'descr' is not a string")),
        None => return Err(bad(path, base, "no 'descr' key")),
    };
    let fortran_order = match get("fortran_order") {
        Some(Lit::Bool(b)) => *b,
        Some(_) => return Err(bad(path, base, "'fortran_order' is not a bool")),
        None => return Err(bad(path, base, "no 'fortran_order' key")),
    };
    let shape = match get("shape") {
        Some(Lit::Seq(dims, _)) => dims
            .iter()
            .map(|d| match d {
                Lit::Int(n) => u64::try_from(*n).ok(),
                _ => None,
            })
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| bad(path, base, "'shape' holds something other than sizes"))?,
        Some(_) => return Err(bad(path, base, "'shape' is not a tuple")),
        None => return Err(bad(path, base, "no 'shape' key")),
    };
    let dtype = D::from_descr(path, &descr)?;
    let count = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&c| c.checked_mul(dtype.itemsize() as u64).is_some())
        .ok_or_else(|| bad(path, base, &format!("shape {shape:?} is too large")))?;
    Ok(NpyHeader { version, descr, dtype, fortran_order, shape, data_offset: 0, count })
}

/// Parses a numpy descr string such as `<f8` (rule 4).
pub fn parse_descr(path: &Path, descr: &str) -> Result<Dtype, Error> {
    let unsupported = |reason: &str| Error::UnsupportedDtype {
        path: PathBuf::from(path),
        descr: descr.to_string(),
        reason: reason.to_string(),
    };
    let mut chars = descr.chars().peekable();
    let endian = match chars.peek() {
        Some('<') => Some(Endian::Little),
        Some('>') => Some(Endian::Big),
        Some('=') => Some(Endian::native()),
        Some('|') => None,
        _ => Some(Endian::native()),
    };
    if matches!(chars.peek(), Some('<' | '>' | '=' | '|')) {
        chars.next();
    }
    let kind = chars.next().ok_or_else(|| unsupported("empty descr"))?;
    let rest: String = chars.collect();
    let size: Option<usize> = rest.parse().ok();
    let reason = match kind {
        'O' => "object arrays are not supported",
        'b' | '?' => "bool arrays are not supported",
        'c' => "complex arrays are not supported",
        'U' | 'S' | 'a' => "string arrays are not supported",
        'V' => "void arrays are not supported",
        'M' | 'm' => "datetime arrays are not supported",
        'f' if size == Some(2) => "float16 is not supported",
        'f' | 'i' | 'u' => match size.and_then(|s| Scalar::from_numpy(kind, s)) {
            Some(scalar) => {
                let endian = match (endian, scalar.size()) {
                    (_, 1) => Endian::Little,
                    (Some(e), _) => e,
                    (None, _) => return Err(unsupported("'|' byte order on a multi-byte type")),
                };
                return Ok(Dtype::new(scalar, endian));
            }
            None => "unknown size",
        },
        _ => "unknown dtype",
    };
    Err(unsupported(reason))
}

/// Writes a version 1.0 `.npy` header for `dtype` and `shape` (C order), padded as NumPy pads it.
/// Tests and the demo use it to make inputs.
pub fn write_header(dtype: Dtype, shape: &[u64], fortran_order: bool) -> Vec<u8> {
    sluice_io::npy_header(&format!("'{}'", dtype.descr()), shape, fortran_order)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn rule2_versions_1_2_3_are_read_and_others_refused() {
        let dir = tempfile::tempdir().unwrap();
        let dict = b"{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }\n";
        for major in [1u8, 2, 3] {
            let mut f = MAGIC.to_vec();
            f.extend_from_slice(&[major, 0]);
            if major == 1 {
                f.extend_from_slice(&(dict.len() as u16).to_le_bytes());
            } else {
                f.extend_from_slice(&(dict.len() as u32).to_le_bytes());
            }
            f.extend_from_slice(dict);
            let offset = f.len() as u64;
            f.extend_from_slice(&[0u8; 24]);
            let h = read_header(&write(dir.path(), "a.npy", &f)).unwrap();
            assert_eq!(h.version, (major, 0));
            assert_eq!(h.dtype, Dtype::new(Scalar::I32, Endian::Big));
            assert!(h.fortran_order);
            assert_eq!((h.shape.clone(), h.count, h.data_offset), (vec![2, 3], 6, offset));
        }
        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&[4, 0, 10, 0]);
        f.extend_from_slice(dict);
        let err = read_header(&write(dir.path(), "v4.npy", &f)).unwrap_err();
        assert!(err.to_string().contains("version 4.0"), "{err}");
    }

    #[test]
    fn rule3_header_round_trips_and_faults_name_an_offset() {
        let dir = tempfile::tempdir().unwrap();
        for (shape, dtype) in [
            (vec![], Dtype::new(Scalar::F64, Endian::Little)),
            (vec![7], Dtype::new(Scalar::U8, Endian::Big)),
            (vec![2, 0, 5], Dtype::new(Scalar::I16, Endian::Big)),
        ] {
            let mut f = write_header(dtype, &shape, false);
            assert_eq!(f.len() % 64, 0);
            let count: u64 = shape.iter().product();
            f.resize(f.len() + count as usize * dtype.itemsize(), 1);
            let h = read_header(&write(dir.path(), "r.npy", &f)).unwrap();
            assert_eq!((h.dtype, h.shape, h.count), (dtype, shape, count));
        }
        let mut f = MAGIC.to_vec();
        let dict = b"{'descr': '<f8', 'shape': (2,), }";
        f.extend_from_slice(&[1, 0, dict.len() as u8, 0]);
        f.extend_from_slice(dict);
        let err = read_header(&write(dir.path(), "k.npy", &f)).unwrap_err();
        assert!(err.to_string().contains("no 'fortran_order' key"), "{err}");
        let mut f = MAGIC.to_vec();
        let dict = b"{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2,), }";
        f.extend_from_slice(&[1, 0, dict.len() as u8, 0]);
        f.extend_from_slice(dict);
        let err = read_header(&write(dir.path(), "m.npy", &f)).unwrap_err();
        assert!(matches!(err, Error::NpyHeader { offset, .. } if offset == 10 + 34), "{err}");
    }

    #[test]
    fn rule4_unsupported_dtypes_are_named() {
        let p = Path::new("x.npy");
        for (descr, word) in [
            ("|O", "object"),
            ("|b1", "bool"),
            ("<c16", "complex"),
            ("<f2", "float16"),
            ("<U8", "string"),
            ("<M8[ns]", "datetime"),
            ("<q8", "unknown"),
            ("<i3", "unknown size"),
        ] {
            let err = parse_descr(p, descr).unwrap_err();
            assert!(err.to_string().contains(word), "{descr}: {err}");
        }
        assert_eq!(parse_descr(p, "|u1").unwrap(), Dtype::new(Scalar::U8, Endian::Little));
        assert_eq!(parse_descr(p, ">f4").unwrap(), Dtype::new(Scalar::F32, Endian::Big));
    }

    #[test]
    fn rule5_short_data_and_short_header_are_truncation_errors() {
        let dir = tempfile::tempdir().unwrap();
        let dtype = Dtype::new(Scalar::F64, Endian::Little);
        let mut f = write_header(dtype, &[10], false);
        let header_len = f.len();
        f.resize(header_len + 79, 0);
        let err = read_header(&write(dir.path(), "t.npy", &f)).unwrap_err();
        assert!(matches!(err, Error::NpyTruncated { expected: 80, actual: 79, .. }), "{err}");
        let err = read_header(&write(dir.path(), "h.npy", &f[..40])).unwrap_err();
        assert!(err.to_string().contains("truncated header"), "{err}");
        let err = read_header(&write(dir.path(), "p.npy", &f[..7])).unwrap_err();
        assert!(err.to_string().contains("truncated header"), "{err}");
        // Trailing bytes after the data are ignored.
        f.resize(header_len + 90, 0);
        assert_eq!(read_header(&write(dir.path(), "long.npy", &f)).unwrap().count, 10);
    }
}
