//! What a file holds (rule 8): a `.npy` array (its header checked against the config) or a raw
//! array of the configured dtype.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{Dtype, Error, npy};

use super::StatsConfig;

/// Where the array's elements are and what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayInfo {
    /// The file.
    pub path: PathBuf,
    /// The `.npy` header, or `None` for a raw file.
    pub npy: Option<npy::NpyHeader>,
    /// The element type.
    pub dtype: Dtype,
    /// Shape (`[count]` for a raw file).
    pub shape: Vec<u64>,
    /// Byte offset of the first element.
    pub data_offset: u64,
    /// Number of elements.
    pub count: u64,
}

impl ArrayInfo {
    /// Bytes of element data.
    pub fn data_len(&self) -> u64 {
        self.count * self.dtype.itemsize() as u64
    }
}

/// Finds out what `path` holds (rule 8): a `.npy` if it starts with the magic or is named
/// `*.npy`, else a raw array of `config.dtype`.
pub fn open_array(path: &Path, config: &StatsConfig) -> Result<ArrayInfo, Error> {
    let open_err = |source| Error::Open { path: path.to_path_buf(), source };
    let mut file = File::open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if !meta.is_file() {
        return Err(Error::NotAFile { path: path.to_path_buf() });
    }
    let mut prefix = Vec::with_capacity(npy::MAGIC.len());
    (&mut file).take(npy::MAGIC.len() as u64).read_to_end(&mut prefix).map_err(open_err)?;
    let named_npy = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    if npy::has_magic(&prefix) || named_npy {
        let header = npy::read_header(path)?;
        let mismatch = |what, given: String, header: String| Error::DtypeMismatch {
            path: path.to_path_buf(),
            what,
            given,
            header,
        };
        if let Some(s) = config.dtype.filter(|&s| s != header.dtype.scalar) {
            return Err(mismatch("dtype", s.name().into(), header.descr.clone()));
        }
        if let Some(e) = config.endian
            && header.dtype.itemsize() > 1
            && e != header.dtype.endian
        {
            return Err(mismatch("endian", e.name().into(), header.descr.clone()));
        }
        return Ok(ArrayInfo {
            path: path.to_path_buf(),
            dtype: header.dtype,
            shape: header.shape.clone(),
            data_offset: header.data_offset,
            count: header.count,
            npy: Some(header),
        });
    }
    let scalar = config.dtype.ok_or_else(|| Error::RawNeedsDtype { path: path.to_path_buf() })?;
    let dtype = Dtype::new(scalar, config.endian.unwrap_or_default());
    let len = meta.len();
    if len % dtype.itemsize() as u64 != 0 {
        return Err(Error::RawSize {
            path: path.to_path_buf(),
            len,
            dtype: scalar.name().into(),
            itemsize: dtype.itemsize(),
        });
    }
    let count = len / dtype.itemsize() as u64;
    Ok(ArrayInfo {
        path: path.to_path_buf(),
        npy: None,
        dtype,
        shape: vec![count],
        data_offset: 0,
        count,
    })
}
