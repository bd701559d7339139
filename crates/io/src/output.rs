//! Writing an output file so that a reader never sees half of it.
//!
//! # Contract
//! 1. A regular-file target is written to a temporary file beside it and renamed over it by
//!    [`OutputFile::commit`]; dropped without `commit`, the temporary file is removed and the
//!    target is untouched.
//! 2. `-` is standard output; a target that exists and is not a regular file (`/dev/null`, a
//!    pipe, a character device) is written directly.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// An output being written; see the module contract.
#[derive(Debug)]
pub struct OutputFile {
    writer: BufWriter<Box<dyn WriteDebug>>,
    temp: Option<PathBuf>,
    target: PathBuf,
}

trait WriteDebug: Write + std::fmt::Debug + Send {}
impl<T: Write + std::fmt::Debug + Send> WriteDebug for T {}

impl OutputFile {
    /// Opens `target` for writing (see the module contract). Errors name the path.
    pub fn create(target: impl AsRef<Path>) -> std::io::Result<OutputFile> {
        let target = target.as_ref().to_path_buf();
        if target.as_os_str() == "-" {
            let out: Box<dyn WriteDebug> = Box::new(std::io::stdout());
            return Ok(OutputFile {
                writer: BufWriter::with_capacity(1 << 16, out),
                temp: None,
                target,
            });
        }
        let direct = std::fs::metadata(&target).map(|m| !m.is_file()).unwrap_or(false);
        if direct {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(|e| with_path(e, &target))?;
            let out: Box<dyn WriteDebug> = Box::new(file);
            return Ok(OutputFile {
                writer: BufWriter::with_capacity(1 << 16, out),
                temp: None,
                target,
            });
        }
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let file = File::create(&temp).map_err(|e| with_path(e, &temp))?;
        let out: Box<dyn WriteDebug> = Box::new(file);
        Ok(OutputFile { writer: BufWriter::with_capacity(1 << 16, out), temp: Some(temp), target })
    }

    /// The target path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes and, for a regular file, renames the temporary file over the target.
    pub fn commit(mut self) -> std::io::Result<()> {
        self.writer.flush().map_err(|e| with_path(e, &self.target))?;
        if let Some(temp) = self.temp.take() {
            std::fs::rename(&temp, &self.target).map_err(|e| {
                let _ = std::fs::remove_file(&temp);
                with_path(e, &self.target)
            })?;
        }
        Ok(())
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

fn with_path(e: std::io::Error, path: &Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_output_leaves_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.txt");
        std::fs::write(&target, "old").unwrap();
        {
            let mut out = OutputFile::create(&target).unwrap();
            out.write_all(b"new but unfinished").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temp file removed");
        let mut out = OutputFile::create(&target).unwrap();
        out.write_all(b"new").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn non_regular_target_is_written_directly() {
        let mut out = OutputFile::create("/dev/null").unwrap();
        out.write_all(b"x").unwrap();
        out.commit().unwrap();
        assert!(Path::new("/dev/null").exists());
    }
}
