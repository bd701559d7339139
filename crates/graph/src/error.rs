//! The one error type of sluice-graph.

use std::path::PathBuf;

/// Everything that can go wrong in import, the store and the algorithms. Variants carry what a
/// user needs to find the fault: the file and line, the store file, the vertex id.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A line of a text input could not be parsed.
    #[error("{path}:{line}: {msg}")]
    Parse {
        /// The input file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        msg: String,
    },
    /// A record of a binary input is unusable.
    #[error("{path}: record {record} (byte {offset}): {msg}")]
    BadRecord {
        /// The input file.
        path: PathBuf,
        /// 0-based record index.
        record: u64,
        /// Byte offset of the record.
        offset: u64,
        /// What is wrong.
        msg: String,
    },
    /// The input as a whole is unusable (empty graph, missing key, bad header ...).
    #[error("{path}: {msg}")]
    Input {
        /// The file (or folder) concerned.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
    /// A store file fails its checksum, is truncated or is inconsistent.
    #[error("{path}: corrupt store: {msg}")]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
    /// The store was written by another version of the format.
    #[error("{path}: store format version {found}, this sluice reads version {expected}")]
    Version {
        /// `meta.json`.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The version this build reads and writes.
        expected: u64,
    },
    /// The file system has too little room for the store.
    #[error("{path}: not enough free space: about {needed} bytes needed, {available} available")]
    NoSpace {
        /// The directory that would be written.
        path: PathBuf,
        /// Estimated bytes needed.
        needed: u64,
        /// Bytes free.
        available: u64,
    },
    /// An I/O error on a named file (ENOSPC included: see [`Error::is_no_space`]).
    #[error("{path}: {what}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
    },
    /// An error from the block pipeline.
    #[error("block pipeline")]
    Pipeline(#[from] sluice_io::Error),
    /// A vertex id given by the user is not a vertex of the graph.
    #[error("vertex {id} is not in the graph")]
    NoSuchVertex {
        /// The original id.
        id: u64,
    },
    /// An algorithm parameter is outside its range.
    #[error("{name} {value} is not in {range}")]
    Parameter {
        /// What the parameter is.
        name: &'static str,
        /// The value given.
        value: f64,
        /// The range it must be in.
        range: &'static str,
    },
    /// A per-vertex input (SpMV's vector) does not have one entry per vertex.
    #[error("the vector has {len} entries, the graph {vertices} vertices")]
    VectorLength {
        /// Entries given.
        len: usize,
        /// |V|.
        vertices: usize,
    },
    /// An option value is unusable.
    #[error("{0}")]
    Config(String),
    /// A failure on one rank of a distributed run (`crate::dist`).
    #[error("rank {rank}")]
    AtRank {
        /// The rank.
        rank: usize,
        /// What failed there.
        #[source]
        source: Box<Error>,
    },
    /// A distributed run's communication failed (`crate::dist`), on process `rank`.
    #[error("rank {rank}: communication failed")]
    Bsp {
        /// The process that saw the failure.
        rank: u32,
        /// The BSP layer's error (it names a failed peer).
        #[source]
        source: sluice_bsp::Error,
    },
    /// The graph is too large for this format version.
    #[error("{0}")]
    TooLarge(String),
    /// An import was given no input file.
    #[error("no input file given")]
    NoInput,
    /// The import target exists, and replacing it was not asked for.
    #[error("{path} already exists")]
    TargetExists {
        /// The target.
        path: PathBuf,
    },
    /// The import target is a non-empty directory that is not a grid store: never replaced.
    #[error("{path} exists and is not a grid store; not replacing it")]
    TargetNotAStore {
        /// The target.
        path: PathBuf,
    },
    /// Original ids are 4 or 8 bytes wide.
    #[error("ids are 4 or 8 bytes wide, not {bytes}")]
    BadIdBytes {
        /// The width asked for.
        bytes: u8,
    },
    /// The input does not say whether the graph is directed, and the options do not either.
    #[error("{path}: {input} does not say its direction")]
    NoDirection {
        /// The input file.
        path: PathBuf,
        /// What the input is ("a SNAP edge list").
        input: &'static str,
    },
    /// The input format takes another number of files.
    #[error("{format} import takes {expected}, not {given} files")]
    InputCount {
        /// The format.
        format: &'static str,
        /// The files it takes.
        expected: &'static str,
        /// The number of files given.
        given: usize,
    },
    /// A vertex has 2^32 or more edges out or in: more than a store's degree array holds.
    #[error("vertex {id} has a degree of 2^32 or more")]
    DegreeOverflow {
        /// The original id.
        id: u64,
    },
    /// A Kronecker scale outside 1..=32.
    #[error("Kronecker scale {scale} is not in 1..=32")]
    BadScale {
        /// The scale asked for.
        scale: u32,
    },
    /// A Kronecker edge factor that gives no edge, or more than 2^64 - 1.
    #[error("edge factor {edge_factor} at scale {scale} gives no edge or more than 2^64 - 1")]
    BadEdgeFactor {
        /// The edge factor asked for.
        edge_factor: u64,
        /// The scale.
        scale: u32,
    },
    /// The import was interrupted by a signal; temporary files were removed.
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    /// Returns true if and only if the error is a full file system (ENOSPC).
    pub fn is_no_space(&self) -> bool {
        match self {
            Error::NoSpace { .. } => true,
            Error::Io { source, .. } => source.raw_os_error() == Some(28),
            _ => false,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, what: &str, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), what: what.to_string(), source }
    }

    pub(crate) fn corrupt(path: impl Into<PathBuf>, msg: impl Into<String>) -> Error {
        Error::Corrupt { path: path.into(), msg: msg.into() }
    }
}
