//! Parsing the header dict (a Python literal) and the descr string (rules 3 and 4).

use std::path::{Path, PathBuf};

use crate::{Dtype, Endian, Error, Scalar};

use super::{NpyDtype, NpyHeader, bad};

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
pub(super) fn parse_dict<D: NpyDtype>(
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
