//! `.npy` complex128 in and out, for the FFT (rule 5 of the module docs).
//!
//! # Contract
//! 1. The input must be a `.npy` (read with [`crate::npy::read_header_as`]) of dtype complex128
//!    (`<c16`, `>c16` or `=c16`), one-dimensional, C order, with a power-of-two length; anything
//!    else is an error naming the file (and the offending descr, shape or length).
//! 2. Input, output and the transform's workspace are reserved from the budget before any data
//!    is read; the reservation error names the file.
//! 3. The output is a version 1.0 `.npy`, `<c16`, shape `(n,)`, written through
//!    [`OutputFile`]: on any error nothing is left at the target.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sluice_io::{Budget, OutputFile, Reservation};

use super::{Buffer, Complex64, Direction, Fft, PROBE_TIME, candidate_procs, fastest};
use crate::npy::{NpyDtype, NpyHeader, read_header_as};
use crate::{Endian, Error};

/// The complex128 element type of a `.npy` descr (`<c16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Complex128 {
    /// Byte order of both parts.
    pub endian: Endian,
}

impl NpyDtype for Complex128 {
    fn from_descr(path: &Path, descr: &str) -> Result<Complex128, Error> {
        let endian = match descr {
            "<c16" => Endian::Little,
            ">c16" => Endian::Big,
            "=c16" => Endian::native(),
            _ => {
                return Err(Error::UnsupportedDtype {
                    path: path.to_path_buf(),
                    descr: descr.to_string(),
                    reason: "the FFT reads complex128 (c16) only".into(),
                });
            }
        };
        Ok(Complex128 { endian })
    }

    fn itemsize(&self) -> usize {
        16
    }
}

/// Bytes per read and write chunk while converting to and from the file's byte order.
const CHUNK_BYTES: usize = 1 << 20;

/// A complex vector read from a file, with the budget it holds.
#[derive(Debug)]
pub struct Loaded {
    /// The values, on a cache-line boundary.
    pub data: Buffer,
    /// The bytes of `data`, held against the budget.
    pub reservation: Reservation,
}

/// Reads and checks the header of the 1-D complex128 `.npy` at `path` (rule 1); returns it
/// and the length n.
pub fn check_npy(path: &Path) -> Result<(NpyHeader<Complex128>, usize), Error> {
    let header = read_header_as::<Complex128>(path)?;
    let bad = |reason: String| Error::BadArray { path: path.to_path_buf(), reason };
    if header.fortran_order {
        return Err(bad("Fortran-order arrays are not supported (save it in C order)".into()));
    }
    let [n] = header.shape[..] else {
        return Err(bad(format!("shape {:?} is not one-dimensional", header.shape)));
    };
    let n = usize::try_from(n).map_err(|_| bad(format!("{n} elements do not fit in memory")))?;
    if !n.is_power_of_two() {
        return Err(in_file(path, Error::NotPowerOfTwo { n }));
    }
    Ok((header, n))
}

/// Reads the 1-D complex128 `.npy` at `path` (rules 1 and 2).
pub fn read_npy(path: &Path, budget: &Budget) -> Result<Loaded, Error> {
    let (header, n) = check_npy(path)?;
    let bad = |reason: String| Error::BadArray { path: path.to_path_buf(), reason };
    let reservation = budget
        .reserve(&format!("input {}", path.display()), (n * 16) as u64)
        .map_err(Error::from)?;
    let open_err = |source| Error::Open { path: path.to_path_buf(), source };
    let mut file = File::open(path).map_err(open_err)?;
    file.seek(SeekFrom::Start(header.data_offset)).map_err(open_err)?;
    let mut data = Buffer::zeroed(n).map_err(|_| bad(format!("cannot allocate {n} values")))?;
    let mut bytes = vec![0u8; CHUNK_BYTES.min(n * 16)];
    let mut done = 0;
    while done < n {
        let take = (n - done).min(bytes.len() / 16);
        let buf = &mut bytes[..take * 16];
        file.read_exact(buf).map_err(open_err)?;
        let big = header.dtype.endian == Endian::Big;
        for (d, v) in data[done..done + take].iter_mut().zip(buf.chunks_exact(16)) {
            let (re, im) = (v[..8].try_into().unwrap(), v[8..].try_into().unwrap());
            *d = if big {
                Complex64::new(f64::from_be_bytes(re), f64::from_be_bytes(im))
            } else {
                Complex64::new(f64::from_le_bytes(re), f64::from_le_bytes(im))
            };
        }
        done += take;
    }
    Ok(Loaded { data, reservation })
}

/// Writes `data` as a `<c16` `.npy` at `path` (rule 3).
pub fn write_npy(path: &Path, data: &[Complex64]) -> Result<(), Error> {
    let write_err = |source| Error::Write { path: path.to_path_buf(), source };
    let mut out = OutputFile::create(path).map_err(write_err)?;
    out.write_all(&sluice_io::npy_header("'<c16'", &[data.len() as u64], false))
        .map_err(write_err)?;
    let mut bytes = Vec::with_capacity(CHUNK_BYTES);
    for chunk in data.chunks(CHUNK_BYTES / 16) {
        bytes.clear();
        for v in chunk {
            bytes.extend_from_slice(&v.re.to_le_bytes());
            bytes.extend_from_slice(&v.im.to_le_bytes());
        }
        out.write_all(&bytes).map_err(write_err)?;
    }
    out.commit().map_err(write_err)
}

/// Options of [`fft_file`].
#[derive(Debug, Clone, Default)]
pub struct FileConfig {
    /// Processes; `None`: [`fastest`]'s choice of [`candidate_procs`] of n and the BSP root's
    /// processors (`SLUICE_BSP_MAX_P`, else the hardware threads), timed on the input.
    pub procs: Option<usize>,
    /// Forward or inverse.
    pub direction: Direction,
    /// Extra timed runs of the transform on the same input (for benchmarks); 0: one run.
    pub repeat: usize,
}

/// What [`fft_file`] did.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// The length n.
    pub n: usize,
    /// The process count p.
    pub procs: usize,
    /// Wall time of each call of [`Fft::process`] (planning and file I/O excluded).
    pub transform_times: Vec<Duration>,
    /// Wall time of planning.
    pub plan_time: Duration,
    /// The output written.
    pub output: PathBuf,
}

/// Transforms the `.npy` at `input` into a `.npy` at `output` (rules 1–3).
pub fn fft_file(
    input: &Path,
    output: &Path,
    config: &FileConfig,
    budget: &Budget,
) -> Result<FileReport, Error> {
    let (_, n) = check_npy(input)?;
    let cores = sluice_bsp::ExecConfig::default().root_p() as usize;
    let procs = match config.procs {
        Some(p) => vec![p],
        None => candidate_procs(n, cores),
    };
    let hold = |what: &str, bytes: u64| {
        budget.reserve(&format!("{what} of {}", input.display()), bytes).map_err(Error::from)
    };
    // Rule 2: everything is reserved before it is allocated: the output and the plans before
    // planning (a plan of 2^26 values holds 1 GiB of twiddles), every candidate's workspace
    // before the data is read.
    let out_reservation = hold("the FFT output", (n * 16) as u64)?;
    let plan_bytes = procs.iter().map(|&p| Fft::plan_bytes(n, p)).sum();
    let plan_reservation = hold("the FFT plans", plan_bytes)?;
    let started = Instant::now();
    let mut plans = procs
        .iter()
        .map(|&p| Fft::new(n, p, config.direction).map_err(|e| in_file(input, e)))
        .collect::<Result<Vec<Fft>, Error>>()?;
    let mut plan_time = started.elapsed();
    let work_bytes = plans.iter().map(Fft::workspace_bytes).sum();
    let work_reservation = hold("the FFT workspace", work_bytes)?;
    let loaded = read_npy(input, budget)?;
    let mut result = Buffer::zeroed(n).map_err(|_| Error::BadArray {
        path: input.to_path_buf(),
        reason: format!("cannot allocate {n} values"),
    })?;
    // Several candidates (small n, no --procs): keep the fastest on this input, now.
    let started = Instant::now();
    let best = fastest(&plans, &loaded.data, &mut result, PROBE_TIME)?;
    let plan = plans.swap_remove(best);
    drop(plans);
    plan_time += started.elapsed();
    let p = plan.procs();
    let mut transform_times = Vec::with_capacity(config.repeat + 1);
    for _ in 0..=config.repeat {
        let t = Instant::now();
        plan.process(&loaded.data, &mut result)?;
        transform_times.push(t.elapsed());
    }
    write_npy(output, &result)?;
    drop((out_reservation, plan_reservation, work_reservation));
    Ok(FileReport { n, procs: p, transform_times, plan_time, output: output.to_path_buf() })
}

fn in_file(path: &Path, source: Error) -> Error {
    Error::InFile { path: path.to_path_buf(), source: Box::new(source) }
}
