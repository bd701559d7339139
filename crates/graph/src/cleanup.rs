//! Temporary paths removed on Ctrl-C / SIGTERM.
//!
//! # Contract
//! 1. A path is registered with [`TempDir::new`] and removed (recursively) when the `TempDir`
//!    drops, on success and on error alike, unless [`TempDir::keep`] was called.
//! 2. After [`install_signal_handler`], SIGINT, SIGTERM and SIGHUP remove every registered
//!    path and exit with status 130.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static REGISTERED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A directory that is removed when dropped or when the process is interrupted.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    /// Creates `path` (which must not exist) and registers it.
    pub fn new(path: PathBuf) -> Result<TempDir, crate::Error> {
        std::fs::create_dir(&path)
            .map_err(|e| crate::Error::io(&path, "cannot create temporary directory", e))?;
        if let Ok(mut r) = REGISTERED.lock() {
            r.push(path.clone());
        }
        Ok(TempDir { path, keep: false })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Unregisters the directory (it was renamed into place).
    pub fn keep(mut self) {
        self.keep = true;
        unregister(&self.path);
    }
}

fn unregister(path: &Path) {
    if let Ok(mut r) = REGISTERED.lock() {
        r.retain(|p| p != path);
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
            unregister(&self.path);
        }
    }
}

/// Removes every registered temporary path (used by the signal handler).
pub fn remove_all() {
    let paths = match REGISTERED.lock() {
        Ok(mut r) => std::mem::take(&mut *r),
        Err(_) => return,
    };
    for p in paths {
        let _ = std::fs::remove_dir_all(&p);
    }
}

/// Installs the handler of contract rule 2. Calling it twice is harmless.
pub fn install_signal_handler() {
    let _ = ctrlc::set_handler(|| {
        remove_all();
        eprintln!("sluice: interrupted; temporary files removed");
        std::process::exit(130);
    });
}
