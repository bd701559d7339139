//! Opening the plan's files, and deciding once per run how each is read: O_DIRECT, buffered, or
//! through a memory mapping (contract rule 7 of `pipeline.rs`).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;

use crate::{DirectMode, Error, Plan, sys};

/// One input file, opened once however many extents name it.
#[derive(Debug)]
pub(super) struct OpenFile {
    pub(super) path: PathBuf,
    pub(super) file: Arc<File>,
    pub(super) direct: bool,
    pub(super) cached_fraction: Option<f64>,
    pub(super) reason: String,
    /// Set for a file read from the page cache through a mapping (IOC engine, `auto`, mostly
    /// cached): its blocks are slices of the mapping, read and copied by nobody.
    pub(super) map: Option<sys::Mapping>,
}

impl OpenFile {
    /// An error if a read of this file's mapping found the file shrunk (`sys::Mapping::fault`):
    /// the mapped bytes from that offset were zeros, not the file's (issue 17, defect 9).
    pub(super) fn check_mapping(&self) -> Result<(), Error> {
        match self.map.as_ref().and_then(|m| m.fault()) {
            None => Ok(()),
            Some(at) => {
                let now = self.file.metadata().map(|m| m.len()).unwrap_or(at);
                let expected = self.map.as_ref().map_or(0, |m| m.len() as u64);
                Err(Error::ShortRead { path: self.path.clone(), offset: now.min(at), expected })
            }
        }
    }
}

/// Share of a file's planned bytes that must be in the page cache for `auto` to read it
/// buffered: above one half, most reads are memory copies and O_DIRECT would re-read them from
/// the disk.
const CACHED_FOR_BUFFERED: f64 = 0.5;

/// Share of a file's planned bytes that must be in the page cache for `auto` to map it: a page
/// missing from a mapping is read by a page fault in the worker, a few pages at a time with
/// nothing else in flight (measured: 0.8 GB/s on a mostly-evicted 4 GiB file against 14 GB/s
/// warm), so only a nearly whole file is mapped; the rest goes through buffered reads.
const CACHED_FOR_MAPPING: f64 = 0.9;

pub(super) fn open_files(
    plan: &Plan,
    mode: DirectMode,
    allow_map: bool,
) -> Result<(Vec<OpenFile>, Vec<usize>), Error> {
    let mut files: Vec<OpenFile> = Vec::new();
    let mut of_extent = Vec::with_capacity(plan.extents().len());
    for extent in plan.extents() {
        if let Some(i) = files.iter().position(|f| f.path == extent.path) {
            of_extent.push(i);
            continue;
        }
        let path = extent.path.clone();
        let open_err = |source| Error::Open { path: path.clone(), source };
        let held = plan.held(&path);
        let file = match held {
            Some(f) => f.try_clone().map_err(open_err)?,
            None => File::open(&path).map_err(open_err)?,
        };
        let meta = file.metadata().map_err(open_err)?;
        if !meta.is_file() {
            return Err(Error::NotAFile { path });
        }
        // A file that shrank since the plan was made fails here, before any read (and before a
        // mapping could reach past its end).
        let end = plan.extents().iter().filter(|e| e.path == path).map(|e| e.offset + e.len);
        let end = end.max().unwrap_or(0);
        if meta.len() < end {
            return Err(Error::ShortRead { path, offset: meta.len(), expected: end });
        }
        let (mut planned, mut cached, mut known) = (0u64, 0u64, true);
        for e in plan.extents().iter().filter(|e| e.path == path) {
            planned += e.len;
            match sys::cached_bytes(&file, e.offset, e.len) {
                Some((bytes, _)) => cached += bytes,
                None => known = false,
            }
        }
        let cached_fraction =
            known.then(|| if planned == 0 { 1.0 } else { cached as f64 / planned as f64 });
        let (want_direct, why) = match (mode, cached_fraction) {
            (DirectMode::Never, _) => (false, "direct mode never".to_string()),
            (DirectMode::Always, _) => (true, "direct mode always".to_string()),
            (DirectMode::Auto, Some(f)) if f > CACHED_FOR_BUFFERED => {
                (false, format!("{:.0}% in the page cache", f * 100.0))
            }
            (DirectMode::Auto, Some(f)) => (true, format!("{:.0}% in the page cache", f * 100.0)),
            (DirectMode::Auto, None) => (true, "page-cache residency unknown".to_string()),
        };
        let (file, direct, mut reason) = if want_direct {
            // A held file is reopened through its descriptor: the same file, whatever its
            // path names now (`Plan::hold`).
            let by = held.map(|f| PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd())));
            match sys::open_direct(by.as_deref().unwrap_or(&path)) {
                Ok(f) => (f, true, why),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    (file, false, format!("{why}; the file system refuses O_DIRECT (EINVAL)"))
                }
                Err(source) => return Err(Error::Open { path, source }),
            }
        } else {
            (file, false, why)
        };
        let mut map = None;
        let mostly_cached = cached_fraction.is_some_and(|f| f >= CACHED_FOR_MAPPING);
        if allow_map && mode == DirectMode::Auto && !direct && mostly_cached {
            match sys::Mapping::new(&file, end) {
                Ok(m) => {
                    map = Some(m);
                    reason.push_str("; memory-mapped");
                }
                Err(e) => reason.push_str(&format!("; cannot map ({e}), buffered reads")),
            }
        }
        of_extent.push(files.len());
        files.push(OpenFile { path, file: Arc::new(file), direct, cached_fraction, reason, map });
    }
    Ok((files, of_extent))
}
