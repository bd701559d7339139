//! Temporary directories removed on every exit path a process can handle.
//!
//! # Contract
//! 1. A path is created and registered in one step by [`TempDir::new`] (in
//!    `sluice_io::output::temps`, the registry shared with output files) and removed
//!    (recursively) when the `TempDir` drops, on success and on error alike, unless
//!    [`TempDir::keep`] was called.
//! 2. After [`install_signal_handler`] (`sluice_io::output::signals::install`), SIGINT, SIGTERM and
//!    SIGHUP remove every registered path and exit with status 130, 143 or 129.
//! 3. The leftovers of a killed run are recognised by name (`temps` rule 3) and removed by the
//!    next run on the same target ([`clean_leftovers`]).

use std::path::{Path, PathBuf};

use sluice_io::output::temps;

/// A directory that is removed when dropped or when the process is interrupted.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    /// Creates `path` (which must not exist) and registers it.
    pub fn new(path: PathBuf) -> Result<TempDir, crate::Error> {
        temps::create_registered(&path, |p| std::fs::create_dir(p))
            .map_err(|e| crate::Error::io(&path, "cannot create temporary directory", e))?;
        Ok(TempDir { path, keep: false })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Unregisters the directory (it was renamed into place).
    pub fn keep(mut self) {
        self.keep = true;
        temps::unregister(&self.path);
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            temps::remove_any(&self.path);
            temps::unregister(&self.path);
        }
    }
}

/// Removes every registered temporary path.
pub fn remove_all() {
    temps::remove_all();
}

/// Removes the leftovers of killed runs named `{prefix}{pid}` in `dir` (rule 3).
pub fn clean_leftovers(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    temps::clean_leftovers(dir, prefix)
}

/// Installs the handler of contract rule 2. Calling it twice is harmless.
pub fn install_signal_handler() {
    sluice_io::output::signals::install();
}
