//! The errors of a rendering pass: the crate's [`Error`] plus what only volumes, transfer
//! functions and images can get wrong.

use std::path::PathBuf;

use crate::Error;

/// Everything that can go wrong in [`render`](super::render). Variants about a file name it
/// (and the line, for a transfer-function file).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VrenError {
    /// An error shared with the other kernels (reading, `.npy` headers, options, the pipeline).
    #[error(transparent)]
    Kernel(#[from] Error),
    /// A raw file without a shape.
    #[error("{path}: a raw volume needs a shape X,Y,Z")]
    NeedsShape {
        /// The volume.
        path: PathBuf,
    },
    /// The file's size is not what the shape and dtype say.
    #[error("{path}: shape {x},{y},{z} of {dtype} needs {expected} bytes, the file has {actual}")]
    SizeMismatch {
        /// The volume.
        path: PathBuf,
        /// Voxels along x (fastest).
        x: u64,
        /// Voxels along y.
        y: u64,
        /// Voxels along z (slowest).
        z: u64,
        /// The dtype's name.
        dtype: &'static str,
        /// Bytes the shape needs.
        expected: u64,
        /// Bytes present.
        actual: u64,
    },
    /// A `.npy` whose shape is not 3-D, or disagrees with the shape given.
    #[error("{path}: {reason}")]
    BadShape {
        /// The volume.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A transfer-function file that does not parse.
    #[error("{path}:{line}: {reason}")]
    Transfer {
        /// The transfer-function file.
        path: PathBuf,
        /// 1-based line number (0 when the fault is the file as a whole).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Writing the image failed.
    #[error("{path}: cannot write the image")]
    Write {
        /// The image file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl From<sluice_io::Error> for VrenError {
    fn from(e: sluice_io::Error) -> VrenError {
        VrenError::Kernel(Error::Io(e))
    }
}
