//! What a volume file holds (rule 1 of [`super`]): a 3-D `.npy` (shape and dtype from the header)
//! or a raw file of the configured shape and dtype, its size checked.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{Dtype, Endian, Error, Scalar, npy};

use super::VrenConfig;

/// A volume's layout: `x` voxels per row (fastest), `y` rows per slice, `z` slices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    /// The file.
    pub path: PathBuf,
    /// Voxels along x, y, z.
    pub shape: [u64; 3],
    /// The element type (little-endian f32, u8 or u16).
    pub dtype: Dtype,
    /// Byte offset of the first voxel.
    pub data_offset: u64,
}

impl Volume {
    /// Bytes of one row of `x` voxels.
    pub fn row_bytes(&self) -> u64 {
        self.shape[0] * self.dtype.itemsize() as u64
    }

    /// Bytes of voxel data.
    pub fn data_len(&self) -> u64 {
        self.row_bytes() * self.shape[1] * self.shape[2]
    }
}

/// Finds out what `path` holds: a `.npy` if it starts with the magic or is named `*.npy`, else
/// a raw volume of `config.shape` and `config.dtype`.
pub fn open_volume(path: &Path, config: &VrenConfig) -> Result<Volume, Error> {
    let open_err = |source| Error::Open { path: path.to_path_buf(), source };
    let mut file = File::open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if !meta.is_file() {
        return Err(Error::NotAFile { path: path.to_path_buf() });
    }
    let mut prefix = Vec::with_capacity(npy::MAGIC.len());
    (&mut file).take(npy::MAGIC.len() as u64).read_to_end(&mut prefix).map_err(open_err)?;
    let named_npy = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    let bad_shape = |reason: String| Error::BadArray { path: path.to_path_buf(), reason };
    let volume = if npy::has_magic(&prefix) || named_npy {
        let h = npy::read_header(path)?;
        if h.shape.len() != 3 {
            return Err(bad_shape(format!(
                "a volume has 3 dimensions; the .npy has shape {:?}",
                h.shape
            )));
        }
        // C order: shape (z, y, x) with x fastest; Fortran order: shape (x, y, z).
        let s = &h.shape;
        let shape = if h.fortran_order { [s[0], s[1], s[2]] } else { [s[2], s[1], s[0]] };
        if let Some(given) = config.shape.filter(|&g| g != shape) {
            return Err(bad_shape(format!(
                "shape {},{},{} disagrees with the .npy header, which says x,y,z = {},{},{}",
                given[0], given[1], given[2], shape[0], shape[1], shape[2]
            )));
        }
        if let Some(s) = config.dtype.filter(|&s| s != h.dtype.scalar) {
            return Err(Error::DtypeMismatch {
                path: path.to_path_buf(),
                what: "dtype",
                given: s.name().into(),
                header: h.descr.clone(),
            });
        }
        Volume { path: path.to_path_buf(), shape, dtype: h.dtype, data_offset: h.data_offset }
    } else {
        let scalar =
            config.dtype.ok_or_else(|| Error::RawNeedsDtype { path: path.to_path_buf() })?;
        let shape = config.shape.ok_or_else(|| Error::NeedsShape { path: path.to_path_buf() })?;
        Volume {
            path: path.to_path_buf(),
            shape,
            dtype: Dtype::new(scalar, Endian::Little),
            data_offset: 0,
        }
    };
    let supported = matches!(volume.dtype.scalar, Scalar::F32 | Scalar::U8 | Scalar::U16);
    if !supported || (volume.dtype.itemsize() > 1 && volume.dtype.endian != Endian::native()) {
        return Err(Error::UnsupportedDtype {
            path: path.to_path_buf(),
            descr: volume.dtype.descr(),
            reason: "volumes are little-endian f32, u8 or u16".into(),
        });
    }
    let expected =
        volume.shape.iter().try_fold(volume.dtype.itemsize() as u64, |a, &n| a.checked_mul(n));
    let actual = meta.len().saturating_sub(volume.data_offset);
    if expected != Some(actual) || volume.shape.contains(&0) {
        let [x, y, z] = volume.shape;
        return Err(Error::SizeMismatch {
            path: path.to_path_buf(),
            x,
            y,
            z,
            dtype: volume.dtype.scalar.name(),
            expected: expected.unwrap_or(u64::MAX),
            actual,
        });
    }
    Ok(volume)
}
