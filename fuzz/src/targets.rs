//! The fuzz targets: one per parser, each calling the library's in-memory entry point for that
//! input on the mutated bytes (no file is written: an execution costs only the parse) and
//! returning its outcome. An `Err` is a pass; a panic is a crash (the driver catches it).

use std::path::{Path, PathBuf};

use anyhow::Result;
use sluice_graph::import::{BinWeight, Format, ImportOptions, fuzz};
use sluice_io::{Budget, Pipeline, PipelineBuilder};
use sluice_kernels::{
    Dtype, GrepConfig, GrepKernel, Hinted, KmeansConfig, StatsConfig, hints, npy,
};

/// What every target shares: the fixed companions of an LDBC input, and a pipeline and scratch
/// directory for [`ImportCase::parse_on_disk`].
#[allow(missing_debug_implementations)]
pub struct Ctx {
    /// A scratch directory (the on-disk check writes its inputs there).
    pub dir: PathBuf,
    pipeline: Pipeline,
    ldbc: [Vec<u8>; 3],
}

/// One fuzz target.
#[allow(missing_debug_implementations)]
pub struct Target {
    /// The target's name (`sluice-fuzz --list`, the libFuzzer target's file name).
    pub name: &'static str,
    /// Tokens the mutator inserts.
    pub dict: &'static [&'static [u8]],
    /// Largest input, bytes.
    pub max_len: usize,
    /// Runs the parser on one input: `Err` is a rejection, a panic a crash.
    pub run: fn(&Ctx, &[u8]) -> Result<()>,
}

/// The input an import target makes of its bytes: files by name, the names given to the
/// import, and its options.
#[allow(missing_debug_implementations)]
pub struct ImportCase {
    /// Every file of the input, by name (no folder).
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// The names the import is given.
    pub inputs: Vec<PathBuf>,
    /// The import's options.
    pub opts: ImportOptions,
}

impl ImportCase {
    /// Parses the case in memory ([`fuzz::parse_bytes`]): the number of edges, or the error.
    pub fn parse(&self) -> Result<u64, sluice_graph::Error> {
        let files: Vec<(PathBuf, &[u8])> =
            self.files.iter().map(|(p, b)| (p.clone(), b.as_slice())).collect();
        fuzz::parse_bytes(&files, &self.inputs, &self.opts)
    }

    /// Writes the case's files to `ctx.dir` and parses them from there ([`fuzz::parse_input`]),
    /// the path an import takes: the test that the in-memory entry agrees with it.
    pub fn parse_on_disk(&self, ctx: &Ctx) -> Result<u64, sluice_graph::Error> {
        for (name, bytes) in &self.files {
            std::fs::write(ctx.dir.join(name), bytes).expect("a scratch file");
        }
        let inputs: Vec<PathBuf> = self.inputs.iter().map(|p| ctx.dir.join(p)).collect();
        fuzz::parse_input(&inputs, &self.opts, &ctx.pipeline)
    }
}

impl Ctx {
    /// A context writing to `dir`, with LDBC companions from `shared` (the datasets folder's
    /// parent).
    pub fn new(dir: PathBuf, shared: &Path) -> Result<Ctx> {
        let pipeline =
            PipelineBuilder::new().block_size(1 << 16).io_threads(1).workers(1).build()?;
        let ex = shared.join("ldbc/example-directed/example-directed");
        let read = |ext: &str| std::fs::read(ex.with_extension(ext)).unwrap_or_default();
        let props = String::from_utf8_lossy(&read("properties"))
            .replace("example-directed.v", "g.v")
            .replace("example-directed.e", "g.e")
            .into_bytes();
        Ok(Ctx { dir, pipeline, ldbc: [props, read("v"), read("e")] })
    }

    /// The import case of target `name` on `data` (None: not an import target).
    pub fn import_case(&self, name: &str, data: &[u8]) -> Option<ImportCase> {
        let one = |file: &str, opts: ImportOptions| ImportCase {
            files: vec![(PathBuf::from(file), data.to_vec())],
            inputs: vec![PathBuf::from(file)],
            opts,
        };
        let ldbc = |which: usize| {
            let mut files = self.ldbc.clone();
            files[which] = data.to_vec();
            ImportCase {
                files: ["g.properties", "g.v", "g.e"]
                    .map(PathBuf::from)
                    .into_iter()
                    .zip(files)
                    .collect(),
                inputs: vec![PathBuf::from("g.properties")],
                opts: ImportOptions::new(Format::Ldbc),
            }
        };
        Some(match name {
            "snap" => one(
                "g.txt",
                ImportOptions { directed: Some(true), ..ImportOptions::new(Format::Snap) },
            ),
            "mtx" => one("g.mtx", ImportOptions::new(Format::Mtx)),
            "ldbc-properties" => ldbc(0),
            "ldbc-v" => ldbc(1),
            "ldbc-e" => ldbc(2),
            "bin-edges" => {
                // Byte 0 picks the id width and the weight column; the rest is the file.
                let (&mode, body) = data.split_first().unwrap_or((&0, &[]));
                let opts = ImportOptions {
                    directed: Some(true),
                    id_bytes: Some(if mode & 1 == 0 { 4 } else { 8 }),
                    bin_weight: [BinWeight::None, BinWeight::F32, BinWeight::F64]
                        [(mode as usize >> 1) % 3],
                    ..ImportOptions::new(Format::Bin)
                };
                ImportCase {
                    files: vec![(PathBuf::from("g.bin"), body.to_vec())],
                    inputs: vec![PathBuf::from("g.bin")],
                    opts,
                }
            }
            _ => return None,
        })
    }

    fn import(&self, name: &str, data: &[u8]) -> Result<()> {
        self.import_case(name, data).expect("an import target").parse()?;
        Ok(())
    }
}

fn npy_header(_ctx: &Ctx, data: &[u8]) -> Result<()> {
    npy::read_header_from::<Dtype>(Path::new("x.npy"), data, data.len() as u64)?;
    Ok(())
}

fn snap(ctx: &Ctx, data: &[u8]) -> Result<()> {
    ctx.import("snap", data)
}

fn mtx(ctx: &Ctx, data: &[u8]) -> Result<()> {
    ctx.import("mtx", data)
}

fn ldbc_properties(ctx: &Ctx, data: &[u8]) -> Result<()> {
    ctx.import("ldbc-properties", data)
}

fn ldbc_v(ctx: &Ctx, data: &[u8]) -> Result<()> {
    ctx.import("ldbc-v", data)
}

fn ldbc_e(ctx: &Ctx, data: &[u8]) -> Result<()> {
    ctx.import("ldbc-e", data)
}

/// Byte 0 picks the id width and the weight column; the rest is the file.
fn bin_edges(ctx: &Ctx, data: &[u8]) -> Result<()> {
    ctx.import("bin-edges", data)
}

/// The mutated `meta.json` with its own checksum recomputed (as a hand edit would do, issue 17
/// defect 5), so that the structural checks after the checksum are reached.
fn store_meta(_ctx: &Ctx, data: &[u8]) -> Result<()> {
    let mut data = data.to_vec();
    let key = b"\"meta_crc32\": \"";
    if let Some(pos) = data.windows(key.len()).position(|w| w == key) {
        let start = pos + key.len();
        if data.len() >= start + 8 {
            data[start..start + 8].copy_from_slice(b"00000000");
            let crc = format!("{:08x}", crc32fast::hash(&data));
            data[start..start + 8].copy_from_slice(crc.as_bytes());
        }
    }
    fuzz::store_meta(&data)?;
    Ok(())
}

/// Byte 0 picks P (1..=16) and, by its top bit, whether the store is weighted (the index then
/// ends with the weights' block CRCs); bytes 1..9 the edge count (LE); the rest is the index.
fn store_index(_ctx: &Ctx, data: &[u8]) -> Result<()> {
    if data.len() < 9 {
        return Ok(());
    }
    let p = 1 + u64::from(data[0] % 16);
    let edges = u64::from_le_bytes(data[1..9].try_into()?);
    fuzz::grid_index(&data[9..], p, edges, data[0] & 0x80 != 0)?;
    Ok(())
}

/// One frame of a packed block, decoded as it is (the CRC stops most mutations) and again with
/// its CRC recomputed, so the header and bit stream checks see every mutation.
fn packed_frame(_ctx: &Ctx, data: &[u8]) -> Result<()> {
    use sluice_graph::store::packed::{FRAME_BYTES, decode_frame};
    let _ = decode_frame(data, &mut Vec::new());
    let mut frame = data.to_vec();
    frame.resize(FRAME_BYTES, 0);
    let crc = crc32fast::hash(&frame[4..]);
    frame[..4].copy_from_slice(&crc.to_le_bytes());
    let mut out = Vec::new();
    let (_, count) = decode_frame(&frame, &mut out)?;
    anyhow::ensure!(out.len() as u64 == count * 4, "decoded {} bytes for {count} edges", out.len());
    Ok(())
}

/// Lines of `KEY=VALUE`, applied to every kernel's configuration; a grep configuration that
/// takes them is compiled.
fn hint_pairs(_ctx: &Ctx, data: &[u8]) -> Result<()> {
    let text = String::from_utf8_lossy(data);
    let pairs = hints::parse_pairs(&text.lines().collect::<Vec<_>>())?;
    let _ = StatsConfig::default().apply_hints(&pairs);
    let _ = KmeansConfig::default().apply_hints(&pairs);
    let mut grep = GrepConfig::new("x");
    if grep.apply_hints(&pairs).is_ok() {
        GrepKernel::new(&grep, Budget::unlimited())?;
    }
    Ok(())
}

fn memory_size(_ctx: &Ctx, data: &[u8]) -> Result<()> {
    let bytes = sluice_io::parse_size(&String::from_utf8_lossy(data))?;
    Budget::new(bytes)?;
    Ok(())
}

/// Every target, one per parser.
pub const TARGETS: &[Target] = &[
    Target {
        name: "npy",
        dict: &[
            b"\x93NUMPY",
            b"\x01\x00",
            b"\x02\x00",
            b"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
            b"'descr'",
            b"'shape'",
            b"'fortran_order'",
            b"True",
            b"False",
            b"'<f8'",
            b"'|u1'",
            b"'>i4'",
            b"'<f2'",
            b"'<c16'",
            b"(",
            b")",
            b",",
            b"{",
            b"}",
            b":",
        ],
        max_len: 4096,
        run: npy_header,
    },
    Target {
        name: "snap",
        dict: &[b"#", b"\n", b"\t", b",", b"\r\n", b" 0.5"],
        max_len: 8192,
        run: snap,
    },
    Target {
        name: "mtx",
        dict: &[
            b"%%MatrixMarket",
            b"matrix",
            b"coordinate",
            b"array",
            b"real",
            b"integer",
            b"pattern",
            b"complex",
            b"general",
            b"symmetric",
            b"skew-symmetric",
            b"hermitian",
            b"%",
            b"\n",
        ],
        max_len: 8192,
        run: mtx,
    },
    Target {
        name: "ldbc-properties",
        dict: &[
            b"graph.g.",
            b"vertex-file",
            b"edge-file",
            b"directed",
            b"= true",
            b"= false",
            b"meta.vertices",
            b"meta.edges",
            b"edge-properties.names",
            b"weight",
            b"real",
            b"g.v",
            b"g.e",
            b"\n",
            b"=",
        ],
        max_len: 4096,
        run: ldbc_properties,
    },
    Target { name: "ldbc-v", dict: &[b"\n", b" ", b"\r"], max_len: 4096, run: ldbc_v },
    Target { name: "ldbc-e", dict: &[b"\n", b" ", b"\r", b" 0.5"], max_len: 4096, run: ldbc_e },
    Target {
        name: "bin-edges",
        dict: &[b"\0\0\0\0", b"\xff\xff\xff\xff", b"\0\0\x80\x7f", b"\0\0\xc0\x7f"],
        max_len: 4096,
        run: bin_edges,
    },
    Target {
        name: "store-meta",
        dict: &[
            b"\"format\"",
            b"\"version\"",
            b"null",
            b"true",
            b"-1",
            b"1e999",
            b"{",
            b"}",
            b"[",
            b"]",
            b"\"",
            b":",
            b",",
        ],
        max_len: 8192,
        run: store_meta,
    },
    Target {
        name: "store-index",
        dict: &[b"\0\0\0\0\0\0\0\0", b"\xff\xff\xff\xff\xff\xff\xff\xff"],
        max_len: 4096,
        run: store_index,
    },
    Target {
        name: "packed-frame",
        dict: &[b"\0\0\0\0", b"\xff\xff\xff\xff", b"\x10", b"\x20", b"\x30"],
        max_len: sluice_graph::store::packed::FRAME_BYTES,
        run: packed_frame,
    },
    Target {
        name: "hints",
        dict: &[
            b"=",
            b"\n",
            b"pattern=",
            b"record_size=",
            b"count=true",
            b"before_context=",
            b"dtype=",
            b"bins=",
            b"range=",
            b"endian=",
            b"k=",
            b"tolerance=",
            b"max_iterations=",
            b"seed=",
            b"init=",
        ],
        max_len: 512,
        run: hint_pairs,
    },
    Target {
        name: "memory",
        dict: &[b"K", b"M", b"G", b"T", b"P", b"E", b"iB", b"B", b".", b" "],
        max_len: 64,
        run: memory_size,
    },
];
