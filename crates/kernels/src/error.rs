//! The one error type of sluice-kernels: every kernel (stats, grep, k-means, vren, FFT) returns
//! [`Error`].

use std::path::PathBuf;

use sluice_io::Error as IoError;

/// Everything that can go wrong in a kernel pass. Variants about a file name it, and the byte
/// offset where one is meaningful.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The pipeline failed (open, read, short read, memory budget ...); its message names the file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// Opening or reading the header of an input failed.
    #[error("{path}: cannot read")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The input is a directory or something else that is not a regular file.
    #[error("{path}: not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// A `.npy` header is malformed.
    #[error("{path}: bad .npy header at byte {offset}: {reason}")]
    NpyHeader {
        /// The file.
        path: PathBuf,
        /// Byte offset in the file where the header went wrong.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A `.npy` file is shorter than its header says.
    #[error(
        "{path}: truncated .npy: shape {shape:?} of {descr} needs {expected} data bytes from byte \
         {data_offset}, the file has {actual}"
    )]
    NpyTruncated {
        /// The file.
        path: PathBuf,
        /// The shape in the header.
        shape: Vec<u64>,
        /// The dtype descr in the header.
        descr: String,
        /// Where the data starts.
        data_offset: u64,
        /// Data bytes the header promises.
        expected: u64,
        /// Data bytes present.
        actual: u64,
    },
    /// A dtype this kernel does not handle (object arrays, strings, float16, structured ...).
    #[error("{path}: unsupported dtype {descr:?}: {reason}")]
    UnsupportedDtype {
        /// The file.
        path: PathBuf,
        /// The dtype as the file (or the user) spelt it.
        descr: String,
        /// Why.
        reason: String,
    },
    /// The configured dtype or byte order disagrees with the `.npy` header.
    #[error("{path}: {what} {given} disagrees with the .npy header, which says {header}")]
    DtypeMismatch {
        /// The file.
        path: PathBuf,
        /// `dtype` or `endian`.
        what: &'static str,
        /// What the user asked for.
        given: String,
        /// What the header says.
        header: String,
    },
    /// A file without the `.npy` magic, and no dtype to read it as a raw array.
    #[error("{path}: not a .npy file (no \\x93NUMPY magic), and no dtype for a raw array")]
    RawNeedsDtype {
        /// The file.
        path: PathBuf,
    },
    /// A raw file whose size is not a multiple of the item size.
    #[error("{path}: size {len} bytes is not a multiple of the {dtype} item size {itemsize}")]
    RawSize {
        /// The file.
        path: PathBuf,
        /// The file size.
        len: u64,
        /// The dtype name.
        dtype: String,
        /// Bytes per item.
        itemsize: usize,
    },
    /// An option value that does not parse as the option's type.
    #[error("option {key}: {value:?} is not {expected}")]
    BadValue {
        /// The option (its hint key).
        key: String,
        /// The value given.
        value: String,
        /// What the option takes (`a non-negative integer`).
        expected: String,
    },
    /// Per-column statistics of an array that is not 2-D.
    #[error("{path}: per-column statistics need a 2-D .npy array; its shape is {shape:?}")]
    NotAMatrix {
        /// The file.
        path: PathBuf,
        /// Its shape (`[count]` for a raw file).
        shape: Vec<u64>,
    },
    /// An option value below the option's least value.
    #[error("option {key}: {value} is less than {min}")]
    TooSmall {
        /// The option (its hint key).
        key: &'static str,
        /// The value given.
        value: usize,
        /// The least value.
        min: usize,
    },
    /// Histogram bins without a range: one streaming pass cannot find the data's range first.
    #[error("option bins: {bins} bins need a range (one pass cannot find the data's range)")]
    BinsWithoutRange {
        /// The bins asked for.
        bins: usize,
    },
    /// A histogram range whose equal bins do not all have a finite, positive width (NumPy's
    /// "Too many bins for data range"; issue 17).
    #[error(
        "option range: too many bins for the data range: cannot create {bins} finite-sized bins over [{lo}, {hi}]"
    )]
    TooManyBins {
        /// Bins asked for.
        bins: usize,
        /// Low end.
        lo: f64,
        /// High end.
        hi: f64,
    },
    /// A histogram range that is not an interval of finite numbers (`lo <= hi`).
    #[error("option range: [{lo}, {hi}] is not an interval of finite numbers")]
    BadRange {
        /// Its low end.
        lo: f64,
        /// Its high end.
        hi: f64,
    },
    /// A hint that is not `key=value`.
    #[error("hint {hint:?} is not key=value")]
    BadHint {
        /// The hint as given.
        hint: String,
    },
    /// A hint key no kernel parameter has.
    #[error("unknown hint key {key:?} (known: {known})")]
    UnknownHint {
        /// The key.
        key: String,
        /// The keys this kernel knows.
        known: &'static str,
    },
    /// Listing the matches of a file failed (the listed records outgrew the memory budget).
    #[error("{path}: listing matches")]
    Listing {
        /// The file searched.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// The pattern does not compile.
    #[error("bad pattern {pattern:?}: {reason}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// The regex crate's explanation, on one line.
        reason: String,
    },
    /// A BSP collective of a distributed kernel failed (a peer died, or the section failed).
    #[error("exchange between processes failed")]
    Bsp(#[from] sluice_bsp::Error),
    /// This process failed in a distributed run (`dist` rule 3).
    #[error("rank {rank}")]
    OnRank {
        /// This process's rank.
        rank: usize,
        /// Its error.
        #[source]
        source: Box<Error>,
    },
    /// Another process of a distributed run failed (`dist` rule 3).
    #[error("rank {rank} failed: {message}")]
    PeerFailed {
        /// The lowest rank that failed.
        rank: usize,
        /// Its error, as it printed it.
        message: String,
    },
    /// The parts of a distributed dataset hold different dtypes.
    #[error("rank {rank}'s part holds {dtype}, another part holds {first}")]
    PartsDisagree {
        /// A rank whose part disagrees.
        rank: usize,
        /// Its dtype.
        dtype: String,
        /// The dtype of an earlier part.
        first: String,
    },
    // ---- k-means (`kmeans`) ----
    /// The array is not `n` records of `d` values (`kmeans` rule 1).
    #[error("{path}: shape {shape:?}: {reason}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// Its shape (`[values]` for a raw file).
        shape: Vec<u64>,
        /// What is wrong.
        reason: String,
    },
    /// Fewer records than clusters.
    #[error("{path}: {n} records cannot make k = {k} clusters (k must be at most the records)")]
    TooFewRecords {
        /// The file.
        path: PathBuf,
        /// Records in it.
        n: u64,
        /// Clusters asked for.
        k: usize,
    },
    /// A NaN or an infinity in the data.
    #[error("{path}: record {record} (byte offset {offset}) holds a NaN or an infinity")]
    NonFinite {
        /// The file.
        path: PathBuf,
        /// The first such record (0-based).
        record: u64,
        /// Its byte offset in the file.
        offset: u64,
    },
    /// The initial centres file does not fit the data.
    #[error("{path}: initial centres: {reason}")]
    Init {
        /// The centres file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Writing an output file (k-means labels or centres, an FFT result) failed.
    #[error("{path}: cannot write")]
    Write {
        /// The output.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    // ---- volume rendering (`vren`) ----
    /// A raw volume without a shape.
    #[error("{path}: a raw volume needs a shape X,Y,Z")]
    NeedsShape {
        /// The volume.
        path: PathBuf,
    },
    /// A volume's size is not what the shape and dtype say.
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
    /// An array of the wrong shape or layout: a volume `.npy` that is not 3-D or disagrees with
    /// the shape given, an FFT input that is not a 1-D C-order array.
    #[error("{path}: {reason}")]
    BadArray {
        /// The file.
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
    /// Writing a rendered image failed.
    #[error("{path}: cannot write the image")]
    WriteImage {
        /// The image file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    // ---- FFT (`fft`) ----
    /// A transform length that is not a power of two (`fft` rule 2).
    #[error("length {n} is not a power of two")]
    NotPowerOfTwo {
        /// The length.
        n: usize,
    },
    /// A process count that does not fit the length (`fft` rule 2).
    #[error("{p} processes cannot transform length {n}: p must be a power of two with p² ≤ n")]
    BadProcs {
        /// The length.
        n: usize,
        /// The process count.
        p: usize,
    },
    /// A buffer of the wrong length for an FFT plan.
    #[error("{what} has {got} elements, the plan needs {expected}")]
    Length {
        /// Which buffer.
        what: &'static str,
        /// The length the plan needs.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// `fft_spmd` called in a section whose size is not the plan's p.
    #[error("the plan is for {p} processes, the BSP section has {nprocs}")]
    SectionSize {
        /// The plan's p.
        p: usize,
        /// The section's size.
        nprocs: usize,
    },
    /// An error about the data of a file (an FFT input's length, say).
    #[error("{path}")]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: Box<Error>,
    },
}
