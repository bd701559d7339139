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

/// A version 1.0 `.npy` header (NumPy's `format.write_array_header_1_0`): magic, version,
/// length, then the dict padded with spaces and a newline to a multiple of 64 bytes. `descr` is
/// the Python literal of the dtype, quotes included: `'<f8'`, or a structured dtype such as
/// `[('id', '<u8'), ('value', '<f8')]`. One writer for every crate that writes `.npy`.
pub fn npy_header(descr: &str, shape: &[u64], fortran_order: bool) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let order = if fortran_order { "True" } else { "False" };
    let mut dict =
        format!("{{'descr': {descr}, 'fortran_order': {order}, 'shape': {shape_text}, }}");
    let total = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat(total.div_ceil(64) * 64 - total));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
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
