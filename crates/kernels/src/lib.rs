//! sluice-kernels: active-storage kernels that run inside the sluice-io block pipeline, one
//! streaming pass each.
//!
//! - [`stats`]: count, NaNs, sum, min, max, mean, variance and a histogram of a typed array
//!   (`.npy`, or a raw file with a [`Dtype`]).
//! - [`grep`]: lines (or fixed-size records) that match a literal or a regex, counted or listed
//!   with their byte offsets.
//!
//! Each kernel is a [`sluice_io::BlockKernel`] ([`StatsKernel`], [`GrepKernel`]) plus one
//! function that plans the pass, reserves the kernel's state from the memory budget, runs it and
//! folds the per-block partials in stream order ([`stats::stats`], [`grep::grep`]; [`grep::grep_with`]
//! hands matches to a callback instead of collecting them). The folds use
//! [`sluice_io::Pipeline::run_ordered`], so no per-block partial outlives its turn, and results
//! are bitwise reproducible for given settings. Parameters come in a config struct
//! ([`StatsConfig`], [`GrepConfig`]) that can also be filled from active-storage hints,
//! `key=value` pairs with the same keys as the CLI flags ([`hints`]). Errors are one type,
//! [`Error`], whose messages name the file (and byte offset where there is one).
//!
//! - [`dist`]: the same kernels on every process of a BSP section (MPI ranks under `mpirun`),
//!   each reading its own stripe or parts, partials combined by collectives (issue 12).
//!
//! Front ends that make their own inputs (the demo, benchmarks) can write `.npy` headers with
//! [`npy::write_header`].
//!
//! ```
//! use sluice_io::{Budget, PipelineBuilder};
//! use sluice_kernels::{GrepConfig, StatsConfig, grep, stats};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let raw = dir.path().join("x.f64");
//! let bytes: Vec<u8> = [1.0f64, 2.0, f64::NAN, 5.0].iter().flat_map(|x| x.to_le_bytes()).collect();
//! std::fs::write(&raw, bytes).unwrap();
//! let pipeline = PipelineBuilder::new().build().unwrap();
//! let budget = Budget::unlimited();
//!
//! let config = StatsConfig::from_hints(&[("dtype", "f64")]).unwrap();
//! let report = stats::stats(&raw, &config, &pipeline, &budget).unwrap();
//! assert_eq!((report.figures.count, report.figures.nan_count), (4, 1));
//! assert_eq!(report.figures.mean.unwrap().as_f64(), 8.0 / 3.0);
//!
//! let text = dir.path().join("t.txt");
//! std::fs::write(&text, "apple\nbanana\ncherry\n").unwrap();
//! let config = GrepConfig::new("an");
//! let found = grep::grep(&text, &config, &pipeline, &budget).unwrap();
//! assert_eq!(found.count, 1);
//! ```
//!
//! # Modules
//! No module holds `unsafe` code (`#![deny(unsafe_code)]`) but the five marked `*`:
//! `fft/exchange.rs`, which registers the FFT's buffers as BSP slots, `fft/shared.rs`, which
//! lends disjoint parts of one buffer to the threads of a section, `fft/huge.rs`, which advises
//! buffers onto huge pages and gives the CPU memory hints (prefetch, non-temporal stores),
//! `dist/zero_copy.rs`, which registers the pool buffers grep's matches lie in, and
//! `kmeans/simd.rs`, which calls the AVX2+FMA distance loop after a run-time CPU check
//! (`#[allow(unsafe_code)]`, one `// SAFETY:` per block).
//!
//! ```text
//! stats.rs             the stats pass: contract, stats()
//!   stats/config.rs    StatsConfig, from fields or hints; the histogram it asks for
//!   stats/array.rs     what a file holds: .npy (header checked) or raw; ArrayInfo
//!   stats/kernel.rs    StatsKernel (a block's BlockStats) and StatsFold (stream-order fold)
//!   stats/histogram.rs NumPy's bin assignment; counts in scratch arrays or atomics
//!   stats/report.rs    Figures, StatsReport and Number, as they print in JSON
//!   stats/axis.rs      per-column figures of a 2-D array (axis 0): stats_axis0, AxisReport
//! grep.rs              the grep pass: GrepConfig, grep(), grep_with(), grep_reader()
//!   grep/search.rs     GrepKernel: pattern list, block-wide search, inverting, context
//!   grep/gnu.rs        GnuPrinter: GNU grep's output format (prefixes, `--`, -o)
//! kmeans.rs            k-means (Lloyd), one streaming pass per iteration: contract, kmeans()
//!   kmeans/config.rs   KmeansConfig and Init, from fields or hints
//!   kmeans/init.rs     initial centres: a file, or k-means++ on a seeded sample
//!   kmeans/assign.rs   the assignment loop (nearest centre by ||c||² − 2x·c)
//!   kmeans/bounds.rs   Hamerly's bounds: records that keep their labels skip the loop, exactly
//!   kmeans/resident.rs a stripe that fits the budget, replayed from memory after pass one
//!   kmeans/simd.rs*    the AVX2+FMA version of that loop (and a hand-written tile), at run time
//!   kmeans/kernel.rs   the block kernel, per-block sums, farthest records, the update step
//!   kmeans/tree.rs     a pass's sums in the canonical block tree; rank stripes (dist too)
//!   kmeans/report.rs   KmeansReport, the centres file, KmeansError (an alias of Error)
//! vren.rs              volume rendering (MIP, front-to-back compositing) to PNG: contract
//!   vren/config.rs     VrenConfig, from fields or hints
//!   vren/volume.rs     the volume's layout: raw or .npy, shape, dtype
//!   vren/transfer.rs   transfer functions: presets and the `VALUE R G B A` file format
//!   vren/kernel.rs     the slab kernel and the ordered compositing fold
//!   vren/view.rs       arbitrary views by shear-warp over the streamed slices
//!   vren/image.rs      the picture: resize, PNG out (atomic)
//! fft.rs               the BSP FFT (Bisseling–Inda): contract, Fft, fft(), ifft()
//!   fft/spmd.rs        one process's steps; LocalFft and fft_spmd for running BSP programs
//!   fft/exchange.rs*   the one redistribution superstep (registers buffers: unsafe)
//!   fft/shared.rs*     Fft::process with p > 1: the steps on memory the p threads share
//!   fft/fourstep.rs    n ≥ 2^21: √n virtual processes on the p threads, cache-sized FFTs
//!   fft/huge.rs*       huge pages for large buffers (madvise); prefetch, non-temporal stores
//!   fft/section.rs     the kept BSP section: p threads that hook a fresh section per call
//!   fft/twiddle.rs     twiddle factors from two √n tables
//!   fft/file.rs        complex128 .npy in and out; fft_file
//! dist.rs              the kernels over BSP processes (MPI ranks): stats, grep, k-means
//!   dist/*.rs          tree, stats, grep, lines, zero_copy*, kmeans, kmeans_parts, exchange
//! npy.rs               .npy header parsing and writing
//!   npy/parse.rs       the header dict (a Python literal) and the descr string
//! dtype.rs             Scalar, Endian, Dtype: element types and their numpy descrs
//! pairwise.rs          pairwise and Neumaier summation
//! hints.rs             active-storage hints: key=value parameters, Hinted
//! error.rs             Error, the crate's one error type (every kernel's errors)
//! ```

#![warn(missing_docs)]
#![deny(unsafe_code)]

mod cpu;
pub mod dist;
mod dtype;
mod error;
pub mod fft;
pub mod grep;
pub mod hints;
pub mod kmeans;
pub mod npy;
mod pairwise;
pub mod stats;
pub mod vren;

pub use dtype::{Dtype, Endian, SCALAR_NAMES, Scalar};
pub use error::Error;
pub use grep::{GrepConfig, GrepKernel, GrepReport, RecordMatch};
pub use hints::Hinted;
pub use kmeans::{KmeansConfig, KmeansError, KmeansReport};
pub use stats::{Histogram, Number, StatsConfig, StatsKernel, StatsReport};
