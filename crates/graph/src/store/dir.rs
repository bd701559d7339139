//! One version of a store (issue 17, defect 3): the directory is opened once and every file is
//! opened relative to that descriptor, so a store replaced meanwhile by rename of its
//! directory (`import --force`) is never mixed with the one being read.
//!
//! # Contract
//! 1. [`StoreDir::open`] opens the directory itself; every later [`StoreDir::open_file`]
//!    resolves its name in that directory, whatever the path names by then.
//! 2. A reader that keeps the `File`s it opened keeps reading that version to the end, even
//!    after the directory is renamed aside or deleted (Linux keeps unlinked files readable
//!    while they are open).
//! 3. Only regular files are opened, without following a symbolic link and without
//!    blocking (a FIFO named like a store file is an error, not a hang).

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use super::Meta;
use crate::Error;

/// An open store directory (contract rule 1).
#[derive(Debug)]
pub struct StoreDir {
    path: PathBuf,
    fd: OwnedFd,
}

impl StoreDir {
    /// Opens the directory `path`.
    pub fn open(path: &Path) -> Result<StoreDir, Error> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io(path, "cannot open store directory", std::io::Error::from(e)))?;
        Ok(StoreDir { path: path.to_path_buf(), fd })
    }

    /// The path the store was opened by (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens store file `name` of this version (rules 1 and 3).
    pub fn open_file(&self, name: &str) -> Result<File, Error> {
        let path = self.path.join(name);
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())
            .map_err(|e| Error::io(&path, "cannot open", std::io::Error::from(e)))?;
        let f = File::from(fd);
        super::check_regular(&f, &path)?;
        Ok(f)
    }

    /// The whole of store file `name`.
    pub(crate) fn read(&self, name: &str) -> Result<Vec<u8>, Error> {
        let path = self.path.join(name);
        let mut bytes = Vec::new();
        self.open_file(name)?
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(&path, "cannot read store file", e))?;
        Ok(bytes)
    }

    /// Reads and checks `meta.json` (see [`super::read_meta`]).
    pub fn read_meta(&self) -> Result<Meta, Error> {
        super::parse_meta(&self.path.join("meta.json"), self.read("meta.json")?)
    }

    /// Reads a whole store file and checks it against its listed length and CRC-32.
    pub fn read_checked(&self, meta: &Meta, name: &str) -> Result<Vec<u8>, Error> {
        let path = self.path.join(name);
        let sum =
            meta.files.get(name).ok_or_else(|| Error::corrupt(&path, "not listed in meta.json"))?;
        let bytes = self.read(name)?;
        if bytes.len() as u64 != sum.len {
            return Err(Error::corrupt(
                &path,
                format!("{} bytes, meta.json says {}", bytes.len(), sum.len),
            ));
        }
        let crc = crc32fast::hash(&bytes);
        if crc != sum.crc32 {
            return Err(Error::corrupt(
                &path,
                format!("checksum mismatch (stored {:08x}, computed {crc:08x})", sum.crc32),
            ));
        }
        Ok(bytes)
    }
}
