//! What to read: an ordered list of file extents read as one concatenated stream, and how the
//! stream is cut into records.
//!
//! # Contract
//! 1. The stream is the concatenation of the extents in order; stream offsets count bytes of it.
//! 2. Every record is seen exactly once and whole: a record that straddles a block boundary or an
//!    extent boundary is stitched at the seam.
//! 3. With `Delimited(b)`, a record ends after each `b`; a last record without `b` counts. With
//!    `Fixed(n)`, the stream is cut every `n` bytes; a short last record is handed over as it is
//!    (kernels that need whole records check `len % n`).

use std::fs::File;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::Error;

/// How the byte stream is cut into records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordLayout {
    /// Records of exactly this many bytes.
    Fixed(NonZeroUsize),
    /// Records end after this byte (`b'\n'` for lines).
    Delimited(u8),
}

/// One piece of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extent {
    /// The file.
    pub path: PathBuf,
    /// First byte of the extent in the file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

/// An ordered list of extents and a record layout.
#[derive(Debug, Clone)]
pub struct Plan {
    extents: Vec<Extent>,
    layout: RecordLayout,
    /// Files already open, by the path extents name them with ([`Plan::hold`]).
    held: Vec<(PathBuf, Arc<File>)>,
}

impl Plan {
    /// An empty plan.
    pub fn new(layout: RecordLayout) -> Plan {
        Plan { extents: Vec::new(), layout, held: Vec::new() }
    }

    /// Reads of `path` in this plan go to `file`, already open, instead of opening `path`
    /// again: a reader that opened a set of files once sees that one version of them even
    /// when they are replaced by rename meanwhile (issue 17, defect 3). Call before pushing
    /// extents of `path`; errors still name `path`.
    pub fn hold(&mut self, path: impl Into<PathBuf>, file: Arc<File>) {
        self.held.push((path.into(), file));
    }

    /// The open file held for `path`, if any.
    pub fn held(&self, path: &Path) -> Option<&Arc<File>> {
        self.held.iter().find(|(p, _)| p == path).map(|(_, f)| f)
    }

    /// A plan over one whole file.
    pub fn file(path: impl AsRef<Path>, layout: RecordLayout) -> Result<Plan, Error> {
        let mut plan = Plan::new(layout);
        plan.push_file(path)?;
        Ok(plan)
    }

    /// Appends a whole file. Errors if it cannot be opened or is not a regular file.
    pub fn push_file(&mut self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        let len = file_len(path, self.held(path))?;
        self.extents.push(Extent { path: path.to_path_buf(), offset: 0, len });
        Ok(())
    }

    /// Appends `len` bytes of `path` from `offset`. Errors if the file is shorter.
    pub fn push_extent(
        &mut self,
        path: impl AsRef<Path>,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        let path = path.as_ref();
        let file_len = file_len(path, self.held(path))?;
        if offset.checked_add(len).is_none_or(|end| end > file_len) {
            return Err(Error::ExtentPastEnd { path: path.to_path_buf(), offset, len, file_len });
        }
        self.extents.push(Extent { path: path.to_path_buf(), offset, len });
        Ok(())
    }

    /// The extents, in stream order.
    pub fn extents(&self) -> &[Extent] {
        &self.extents
    }

    /// The record layout.
    pub fn layout(&self) -> RecordLayout {
        self.layout
    }

    /// Total bytes of the stream.
    pub fn total_len(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }
}

fn file_len(path: &Path, held: Option<&Arc<File>>) -> Result<u64, Error> {
    let opened;
    let file = match held {
        Some(f) => &**f,
        None => {
            opened = File::open(path)
                .map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
            &opened
        }
    };
    let meta =
        file.metadata().map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
    if !meta.is_file() {
        return Err(Error::NotAFile { path: path.to_path_buf() });
    }
    Ok(meta.len())
}
