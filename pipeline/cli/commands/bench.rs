//! `drivegen bench visibility|corrupt|codecs`: throughput tables, each implementation beside the
//! others and the Python reference measured in the same run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::bench::visibility as vb;
use crate::gpu::{Device, DeviceChoice};
use crate::visibility::raster::CpuRasteriser;
use crate::{Error, Result};
use clap::{Args, Subcommand};

use crate::cli::args::{count, count32, device};

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Camera-frames/s of projection + z-buffer at 1600×900 with ~50 boxes.
    Visibility(BenchVisibilityArgs),
    /// Images/s per corruption at 1600×900: GPU kernels, GPU with JPEG decode/encode, the CPU
    /// twin, and imagecorruptions (benches/reference/corrupt.py) where it is installed.
    Corrupt(BenchCorruptArgs),
    /// Images/s of JPEG and PNG encoding at 1600×900, drivegen beside Pillow (libjpeg-turbo).
    Codecs(BenchCodecsArgs),
}

impl BenchCommand {
    pub fn run(self) -> Result<ExitCode> {
        match self {
            BenchCommand::Visibility(a) => a.run(),
            BenchCommand::Corrupt(a) => a.run(),
            BenchCommand::Codecs(a) => a.run(),
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct BenchVisibilityArgs {
    /// Camera frames per timed run.
    #[arg(long, default_value_t = 256, value_parser = count)]
    pub frames: usize,
    /// Boxes around the ego per frame.
    #[arg(long, default_value_t = 50)]
    pub boxes: usize,
    #[arg(long, default_value_t = 1600, value_parser = count32)]
    pub width: u32,
    #[arg(long, default_value_t = 900, value_parser = count32)]
    pub height: u32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Timed repetitions (the best counts).
    #[arg(long, default_value_t = 3, value_parser = count)]
    pub repeats: usize,
    /// Which implementations to time: `cpu` (the twin), `gpu` (any adapter, a software one
    /// included) or `auto` (the twin, and the GPU every stage's `auto` would pick: hardware only).
    #[arg(long, default_value = "auto", value_parser = device)]
    pub device: DeviceChoice,
    /// Python with nuscenes-devkit for MetaVQA's method (default: `.venv-devkit/bin/python`
    /// when it exists); `none` skips it.
    #[arg(long)]
    pub python: Option<String>,
    /// Frames given to the Python reference (it is slow; its rate is per frame).
    #[arg(long, default_value_t = 64, value_parser = count)]
    pub python_frames: usize,
    /// Instead of the throughput table, run the stage (`drivegen visibility`) on one frame
    /// holding this many boxes on a 1 m grid around the ego, five Waymo cameras at
    /// --width×--height with the Waymo lens, and report its time and peak memory.
    #[arg(long, value_parser = count)]
    pub many_boxes: Option<usize>,
    /// With --many-boxes: pinhole cameras instead of the lens.
    #[arg(long, requires = "many_boxes")]
    pub pinhole: bool,
    /// With --many-boxes: write the store and the table here and keep them (so another binary
    /// can be run on the same store); by default a temporary folder, removed after.
    #[arg(long, requires = "many_boxes")]
    pub keep: Option<PathBuf>,
}

impl BenchVisibilityArgs {
    pub fn run(self) -> Result<ExitCode> {
        if let Some(boxes) = self.many_boxes {
            return self.many(boxes);
        }
        let b = vb::VisibilityBench {
            frames: self.frames,
            boxes: self.boxes,
            width: self.width,
            height: self.height,
            seed: self.seed,
            repeats: self.repeats,
        };
        let frames = vb::frames(&b);
        let mut rows = Vec::new();
        let mut device = "none".to_string();
        let mut totals = Vec::new();
        if let Some(gpu) = self.gpu()? {
            device = gpu.info().to_string();
            let r = crate::visibility::GpuRasteriser::new(gpu)?;
            let (t, v) = vb::time_rasteriser(&frames, &r, b.repeats)?;
            eprintln!("gpu: {:.1} frames/s", t.frames_per_s());
            rows.push(t);
            totals.push(v);
        }
        if self.device != DeviceChoice::Gpu {
            let (mut t, v) = vb::time_rasteriser(&frames, &CpuRasteriser, b.repeats)?;
            t.what = format!("cpu twin ({} threads)", rayon::current_num_threads());
            eprintln!("cpu: {:.1} frames/s", t.frames_per_s());
            rows.push(t);
            totals.push(v);
        }
        if totals.windows(2).any(|w| w[0] != w[1]) {
            return Err(Error::Gpu {
                kernel: "zbuffer".into(),
                detail: format!(
                    "GPU and CPU disagree on the benchmark frames: visible pixels {totals:?}"
                ),
            });
        }
        let reference = match python(self.python.as_deref()) {
            Some(py) => {
                let n = self.python_frames.min(frames.len()).max(1);
                let file = std::env::temp_dir()
                    .join(format!("drivegen-bench-vis-{}.json", std::process::id()));
                vb::export(&frames[..n], &file)?;
                let r = vb::run_reference(&py, &vb::reference_script(), &file);
                let _ = std::fs::remove_file(&file);
                Some((r?, n))
            }
            None => None,
        };
        print!("{}", vb::table(&b, &device, &rows, reference));
        Ok(ExitCode::SUCCESS)
    }
}

impl BenchVisibilityArgs {
    /// The GPU to time, chosen as every stage chooses ([`Device::open`]: `auto` passes over a
    /// software adapter); the CPU twin is timed beside it unless `--device gpu`.
    fn gpu(&self) -> Result<Option<std::sync::Arc<crate::gpu::Gpu>>> {
        if self.device == DeviceChoice::Cpu {
            return Ok(None);
        }
        let gpu = Device::open(self.device)?.arc();
        if gpu.is_none() {
            eprintln!(
                "drivegen: no hardware GPU; the CPU twin only (`--device gpu` times any adapter)"
            );
        }
        Ok(gpu)
    }

    /// The many-box case: the stage on one frame of `boxes` boxes, once per device asked for.
    fn many(&self, boxes: usize) -> Result<ExitCode> {
        let m = vb::ManyBoxes {
            boxes,
            width: self.width,
            height: self.height,
            pinhole: self.pinhole,
        };
        let (dir, temporary) = match &self.keep {
            Some(d) => (d.clone(), false),
            None => (
                std::env::temp_dir().join(format!("drivegen-bench-many-{}", std::process::id())),
                true,
            ),
        };
        let store = dir.join("store");
        vb::write_many_boxes_store(&m, &store)?;
        let mut rasterisers: Vec<Box<dyn crate::visibility::raster::Rasteriser>> = Vec::new();
        if let Some(gpu) = self.gpu()? {
            rasterisers.push(Box::new(crate::visibility::GpuRasteriser::new(gpu)?));
        }
        if self.device != DeviceChoice::Gpu {
            rasterisers.push(Box::new(CpuRasteriser));
        }
        let mut runs = Vec::new();
        for r in &rasterisers {
            let out = dir.join(format!("visibility-{}.arrow", r.name()));
            runs.push((
                r.name().to_string(),
                vb::time_many_boxes(&m, &store, &out, r.as_ref()),
            ));
        }
        if temporary {
            let _ = std::fs::remove_dir_all(&dir);
        }
        let lens = if m.pinhole { "pinhole" } else { "Waymo lens" };
        println!(
            "visibility, many boxes: {boxes} boxes in one frame, 5 cameras of {}×{} ({lens}); {} CPU threads",
            m.width,
            m.height,
            rayon::current_num_threads()
        );
        println!("| rasteriser | images | rows | triangles (most from one box) | wall s | peak RSS MiB |");
        println!("|---|---:|---:|---:|---:|---:|");
        for (name, run) in runs {
            let r = run?;
            println!(
                "| {name} | {} | {} | {} ({}) | {:.2} | {} |",
                r.camera_images,
                r.rows,
                r.triangles,
                r.max_box_triangles,
                r.seconds,
                r.peak_rss_mib.map_or("–".into(), |v| format!("{v:.0}"))
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// The Python that runs MetaVQA's method: `--python`, else the devkit venv when it exists.
fn python(flag: Option<&str>) -> Option<PathBuf> {
    match flag {
        Some("none") => None,
        Some(p) => Some(PathBuf::from(p)),
        None => {
            let p = Path::new(".venv-devkit/bin/python");
            p.is_file().then(|| p.to_path_buf())
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct BenchCorruptArgs {
    #[arg(long, default_value_t = 1600, value_parser = count32)]
    pub width: u32,
    #[arg(long, default_value_t = 900, value_parser = count32)]
    pub height: u32,
    /// Images per GPU measurement.
    #[arg(long, default_value_t = 16, value_parser = count)]
    pub images: usize,
    /// Images per CPU-twin measurement.
    #[arg(long, default_value_t = 2, value_parser = count)]
    pub cpu_images: usize,
    /// The python with imagecorruptions (default: .venv-oracles/bin/python if present); `none`
    /// skips the reference.
    #[arg(long)]
    pub python: Option<String>,
    /// Skip the CPU twin and the Python reference.
    #[arg(long)]
    pub gpu_only: bool,
    /// Where the GPU columns run, chosen as every stage chooses: `auto` (a hardware GPU, else
    /// none), `gpu` (any adapter, a software one included) or `cpu` (no GPU columns).
    #[arg(long, default_value = "auto", value_parser = device)]
    pub device: DeviceChoice,
    /// Write the Markdown table here too.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

impl BenchCorruptArgs {
    pub fn run(self) -> Result<ExitCode> {
        let python = match self.python.as_deref() {
            Some("none") => None,
            Some(p) => Some(PathBuf::from(p)),
            None => {
                let p = PathBuf::from(".venv-oracles/bin/python");
                p.exists().then_some(p)
            }
        };
        let opts = crate::corrupt::bench::BenchOptions {
            width: self.width,
            height: self.height,
            gpu_images: self.images,
            cpu_images: self.cpu_images,
            python: if self.gpu_only { None } else { python },
            cpu: !self.gpu_only,
            device: Device::open(self.device)?,
        };
        if opts.device.gpu().is_none() && self.device != DeviceChoice::Cpu {
            eprintln!(
                "drivegen: no hardware GPU; no GPU columns (`--device gpu` times any adapter)"
            );
        }
        let report = crate::corrupt::bench::run(&opts)?;
        print!("{report}");
        if let Some(p) = self.report.filter(|p| !crate::store::atomic::is_stdout(p)) {
            crate::store::atomic::write_report(&p, report.as_bytes())?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

#[derive(Debug, Args)]
pub(crate) struct BenchCodecsArgs {
    #[arg(long, default_value_t = 1600, value_parser = count32)]
    pub width: u32,
    #[arg(long, default_value_t = 900, value_parser = count32)]
    pub height: u32,
    #[arg(long, default_value_t = 95)]
    pub quality: u8,
    /// A python with Pillow (default: `.venv-interop/bin/python` when it exists); `none` skips
    /// the reference.
    #[arg(long)]
    pub python: Option<String>,
}

impl BenchCodecsArgs {
    pub fn run(self) -> Result<ExitCode> {
        if !(1..=100).contains(&self.quality) {
            return Err(Error::invalid("--quality", "must be 1 to 100"));
        }
        let python = match self.python.as_deref() {
            Some("none") => None,
            Some(p) => Some(PathBuf::from(p)),
            None => {
                let p = Path::new(".venv-interop/bin/python");
                p.is_file().then(|| p.to_path_buf())
            }
        };
        let b = crate::bench::codecs::CodecBench {
            width: self.width,
            height: self.height,
            quality: self.quality,
            python,
        };
        print!("{}", crate::bench::codecs::run(&b)?);
        Ok(ExitCode::SUCCESS)
    }
}
