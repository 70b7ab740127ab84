//! The kernel table: every WGSL kernel of `kernels/`, its source as compiled (shared
//! `*.wgsl.inc` code prepended) and the CPU twin it is tested against. Stages name kernels by
//! [`KernelId`], so a kernel that is not in the table cannot be asked for, and the tests below
//! hold the table to the `kernels/` folder and to the twins' source files.

/// A kernel of `kernels/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelId {
    ProjectPoints,
    Zbuffer,
    SomEdtCols,
    SomEdtRows,
    SomAnchor,
    SomDraw,
    CorruptPixel,
    CorruptDark,
    CorruptMotion,
    CorruptZoom,
    CorruptSplash,
    CorruptGaussH,
    CorruptGaussV,
    CorruptFogLevel,
    CorruptFogStats,
    CorruptFogComposite,
    CorruptImageSum,
    CorruptSnowNoise,
    CorruptSnowZoom,
    CorruptSnowLayer,
    CorruptSnowComposite,
    CorruptRainDrops,
    CorruptRainStreak,
    CorruptRainBlend,
    CorruptRainFinal,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Shader {
    pub id: KernelId,
    /// The file stem in `kernels/`, and the name errors and the pipeline cache use.
    pub name: &'static str,
    /// The WGSL source as compiled.
    pub source: &'static str,
    /// The library file (under `pipeline/`) holding the CPU twin.
    pub twin_file: &'static str,
    /// The CPU twin: the function in `twin_file` whose arithmetic the kernel repeats.
    pub twin: &'static str,
}

/// Every kernel, in [`KernelId`] order.
pub const KERNELS: &[Shader] = &[
    Shader {
        id: KernelId::ProjectPoints,
        name: "project_points",
        source: include_str!("../../kernels/project_points.wgsl"),
        twin_file: "cpu/project_points.rs",
        twin: "project_points",
    },
    Shader {
        id: KernelId::Zbuffer,
        name: "zbuffer",
        source: include_str!("../../kernels/zbuffer.wgsl"),
        twin_file: "visibility/raster/cpu.rs",
        twin: "raster_cpu",
    },
    Shader {
        id: KernelId::SomEdtCols,
        name: "som_edt_cols",
        source: include_str!("../../kernels/som_edt_cols.wgsl"),
        twin_file: "visibility/anchor/mod.rs",
        twin: "edt_columns",
    },
    Shader {
        id: KernelId::SomEdtRows,
        name: "som_edt_rows",
        source: include_str!("../../kernels/som_edt_rows.wgsl"),
        twin_file: "visibility/anchor/mod.rs",
        twin: "edt_row",
    },
    Shader {
        id: KernelId::SomAnchor,
        name: "som_anchor",
        source: include_str!("../../kernels/som_anchor.wgsl"),
        twin_file: "visibility/anchor/mod.rs",
        twin: "argmax_cpu",
    },
    Shader {
        id: KernelId::SomDraw,
        name: "som_draw",
        source: include_str!("../../kernels/som_draw.wgsl"),
        twin_file: "som/draw.rs",
        twin: "draw_cpu",
    },
    Shader {
        id: KernelId::CorruptPixel,
        name: "corrupt_pixel",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_pixel.wgsl")
        ),
        twin_file: "corrupt/photometric/mod.rs",
        twin: "pixel_cpu",
    },
    Shader {
        id: KernelId::CorruptDark,
        name: "corrupt_dark",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_dark.wgsl")
        ),
        twin_file: "corrupt/photometric/dark.rs",
        twin: "dark_cpu",
    },
    Shader {
        id: KernelId::CorruptMotion,
        name: "corrupt_motion",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_motion.wgsl")
        ),
        twin_file: "corrupt/blur.rs",
        twin: "motion_cpu",
    },
    Shader {
        id: KernelId::CorruptZoom,
        name: "corrupt_zoom",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_zoom.wgsl")
        ),
        twin_file: "corrupt/blur.rs",
        twin: "zoom_cpu",
    },
    Shader {
        id: KernelId::CorruptSplash,
        name: "corrupt_splash",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_splash.wgsl")
        ),
        twin_file: "corrupt/occlusion.rs",
        twin: "splash_value",
    },
    Shader {
        id: KernelId::CorruptGaussH,
        name: "corrupt_gauss_h",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_gauss_h.wgsl")
        ),
        twin_file: "corrupt/blur.rs",
        twin: "gaussian_blur_f32",
    },
    Shader {
        id: KernelId::CorruptGaussV,
        name: "corrupt_gauss_v",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_gauss_v.wgsl")
        ),
        twin_file: "corrupt/blur.rs",
        twin: "gaussian_blur_f32",
    },
    Shader {
        id: KernelId::CorruptFogLevel,
        name: "corrupt_fog_level",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_fog_level.wgsl")
        ),
        twin_file: "corrupt/weather/fog.rs",
        twin: "fog_level_element",
    },
    Shader {
        id: KernelId::CorruptFogStats,
        name: "corrupt_fog_stats",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_fog_stats.wgsl")
        ),
        twin_file: "corrupt/weather/fog.rs",
        twin: "fog_cpu",
    },
    Shader {
        id: KernelId::CorruptFogComposite,
        name: "corrupt_fog_composite",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_fog_composite.wgsl")
        ),
        twin_file: "corrupt/weather/fog.rs",
        twin: "fog_value",
    },
    Shader {
        id: KernelId::CorruptImageSum,
        name: "corrupt_image_sum",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_image_sum.wgsl")
        ),
        twin_file: "corrupt/weather/rain.rs",
        twin: "mean_term",
    },
    Shader {
        id: KernelId::CorruptSnowNoise,
        name: "corrupt_snow_noise",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_noise.wgsl")
        ),
        twin_file: "corrupt/weather/snow.rs",
        twin: "snow_noise",
    },
    Shader {
        id: KernelId::CorruptSnowZoom,
        name: "corrupt_snow_zoom",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_zoom.wgsl")
        ),
        twin_file: "corrupt/weather/snow.rs",
        twin: "snow_zoomed",
    },
    Shader {
        id: KernelId::CorruptSnowLayer,
        name: "corrupt_snow_layer",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_layer.wgsl")
        ),
        twin_file: "corrupt/weather/snow.rs",
        twin: "snow_layer",
    },
    Shader {
        id: KernelId::CorruptSnowComposite,
        name: "corrupt_snow_composite",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_snow_composite.wgsl")
        ),
        twin_file: "corrupt/weather/snow.rs",
        twin: "snow_composite",
    },
    Shader {
        id: KernelId::CorruptRainDrops,
        name: "corrupt_rain_drops",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_drops.wgsl")
        ),
        twin_file: "corrupt/weather/rain.rs",
        twin: "rain_drop",
    },
    Shader {
        id: KernelId::CorruptRainStreak,
        name: "corrupt_rain_streak",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_streak.wgsl")
        ),
        twin_file: "corrupt/weather/rain.rs",
        twin: "rain_streak",
    },
    Shader {
        id: KernelId::CorruptRainBlend,
        name: "corrupt_rain_blend",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_blend.wgsl")
        ),
        twin_file: "corrupt/weather/rain.rs",
        twin: "rain_cpu",
    },
    Shader {
        id: KernelId::CorruptRainFinal,
        name: "corrupt_rain_final",
        source: concat!(
            include_str!("../../kernels/corrupt_common.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_params.wgsl.inc"),
            include_str!("../../kernels/corrupt_rain_final.wgsl")
        ),
        twin_file: "corrupt/weather/rain.rs",
        twin: "rain_final",
    },
];

impl KernelId {
    /// The kernel's row of [`KERNELS`].
    pub(crate) fn shader(self) -> &'static Shader {
        &KERNELS[self as usize]
    }

    /// The file stem in `kernels/`.
    pub const fn name(self) -> &'static str {
        KERNELS[self as usize].name
    }

    /// The WGSL source as compiled.
    pub fn source(self) -> &'static str {
        self.shader().source
    }

    /// The kernel whose file stem is `name`.
    pub fn from_name(name: &str) -> Option<KernelId> {
        KERNELS.iter().find(|s| s.name == name).map(|s| s.id)
    }
}

impl std::fmt::Display for KernelId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_in_id_order() {
        for (i, s) in KERNELS.iter().enumerate() {
            assert_eq!(s.id as usize, i, "{} is out of place", s.name);
        }
    }

    #[test]
    fn every_kernel_names_a_twin_that_exists() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline");
        for s in KERNELS {
            let text = std::fs::read_to_string(root.join(s.twin_file))
                .unwrap_or_else(|e| panic!("{}: twin file {}: {e}", s.name, s.twin_file));
            let defined = text.lines().any(|l| {
                let l = l.trim_start();
                let l = l.strip_prefix("pub ").unwrap_or(l);
                let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
                l.strip_prefix("fn ")
                    .and_then(|r| r.strip_prefix(s.twin))
                    .is_some_and(|r| r.starts_with('(') || r.starts_with('<'))
            });
            assert!(defined, "{}: no fn {} in {}", s.name, s.twin, s.twin_file);
        }
    }
}
