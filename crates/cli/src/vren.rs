//! `sluice vren FILE -o image.png`: volume rendering in one streaming pass. Parses the flags
//! into a [`VrenConfig`] (a hint that contradicts a flag is an error), calls
//! [`sluice_kernels::vren::render_to_png`], and prints a line or one JSON object.

use std::path::PathBuf;
use std::process::ExitCode;

use sluice_kernels::Error as KernelError;
use sluice_kernels::vren::VrenConfig;

use crate::common::{PipelineArgs, Progress};

/// Arguments of `sluice vren`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Layout: X*Y*Z voxels, x fastest (numpy vol[z, y, x] in C order; a .npy gives \
its own shape and dtype). Rays run from index 0 to the back along --axis; the image is the \
volume reduced over that axis (along z: image[y, x]). MIP maps the largest value through the \
transfer function's colour; composite blends front to back (C += (1-A)*a*c) over black. \
Transfer file: lines `VALUE R G B A` (value in data units, colour and opacity in [0,1], values \
increasing, # comments); presets gray, hot, cool span --range."
)]
pub(crate) struct VrenArgs {
    /// The volume: a 3-D .npy, or a raw file of --shape and --dtype.
    file: PathBuf,
    /// The PNG to write (8-bit RGB).
    #[arg(short, long, value_name = "PNG")]
    output: PathBuf,
    /// Voxels X,Y,Z of a raw file, x fastest (a .npy must agree).
    #[arg(long, value_name = "X,Y,Z")]
    shape: Option<String>,
    /// Element type of a raw file: f32|u8|u16 (little-endian; a .npy must agree).
    #[arg(long, value_name = "TYPE")]
    dtype: Option<String>,
    /// The axis rays run along: x|y|z [default: z].
    #[arg(long, value_name = "AXIS")]
    axis: Option<String>,
    /// View from any direction: azimuth,elevation in degrees (shear-warp); 0,0 is --axis z,
    /// 90,0 looks along +x (screen right = -z), 0,90 along +y.
    #[arg(long, value_name = "AZ,EL", allow_hyphen_values = true, conflicts_with = "axis")]
    view: Option<String>,
    /// mip (maximum intensity) or composite (front-to-back alpha) [default: mip].
    #[arg(long, value_name = "MODE")]
    mode: Option<String>,
    /// Transfer function: a preset (gray, hot, cool) or a control-point file [default: gray].
    #[arg(long, value_name = "FILE|PRESET")]
    transfer: Option<String>,
    /// Value range LO,HI the presets span [default: 0,255 for u8, 0,65535 for u16, 0,1 for f32].
    #[arg(long, value_name = "LO,HI", allow_hyphen_values = true)]
    range: Option<String>,
    /// Output size W,H (nearest neighbour) [default: the projection's own].
    #[arg(long, value_name = "W,H")]
    size: Option<String>,
    /// Kernel parameter as an active-storage hint (keys: shape, dtype, axis, mode, transfer,
    /// range, size); repeatable.
    #[arg(long = "hint", value_name = "KEY=VALUE")]
    hints: Vec<String>,
    /// Print one JSON object (the image, the volume and a `run` object) instead of a line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

pub(crate) fn run(args: VrenArgs) -> anyhow::Result<ExitCode> {
    let mut config = VrenConfig::default();
    let flags = [
        ("shape", &args.shape),
        ("dtype", &args.dtype),
        ("axis", &args.axis),
        ("view", &args.view),
        ("mode", &args.mode),
        ("transfer", &args.transfer),
        ("range", &args.range),
        ("size", &args.size),
    ];
    crate::common::apply_flags(&mut config, &flags, &args.hints)?;
    let budget = args.pipeline.budget()?;
    let total = std::fs::metadata(&args.file).map_or(0, |m| m.len());
    let progress = Progress::start("vren", total, true);
    let pipeline = args.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let report =
        sluice_kernels::vren::render_to_png(&args.file, &config, &args.output, &pipeline, &budget)
            .map_err(|e| match e {
                KernelError::RawNeedsDtype { .. } => {
                    anyhow::Error::new(e).context("give --dtype (and --shape) for a raw volume")
                }
                KernelError::NeedsShape { .. } => {
                    anyhow::Error::new(e).context("give --shape X,Y,Z")
                }
                KernelError::DtypeMismatch { .. } => anyhow::Error::new(e).context("--dtype"),
                KernelError::Transfer { .. } => anyhow::Error::new(e).context("--transfer"),
                e => e.into(),
            })?;
    drop(progress);
    let text = if args.json {
        serde_json::to_string(&report)? + "\n"
    } else {
        let [x, y, z] = report.shape;
        format!(
            "{}: {x}x{y}x{z} {} ({}), {} along {} -> {} ({}x{})\n{}",
            report.file.display(),
            report.dtype,
            report.format,
            report.mode,
            report.axis,
            args.output.display(),
            report.image.0,
            report.image.1,
            crate::common::run_figures(&report.run, crate::common::Layout::Row)
        )
    };
    crate::common::print(format_args!("{text}"))?;
    Ok(ExitCode::SUCCESS)
}
