//! The DriveBench corruptions (`docs/drivebench.md` §1): 15 kinds × severities 1–5.
//!
//! A corruption is applied to the views (camera images) of one frame. [`plan_frame`] makes
//! every random decision first — which views, angles, discs, ellipses, slants — from the
//! counter-based generator of [`rng`] keyed by (seed, image or frame id, corruption,
//! severity), and records them as JSON metadata. The pixels are then produced by the WGSL
//! kernels ([`gpu`]) or by their CPU twins ([`apply_cpu`]), which share the plan. Nothing
//! depends on which other images are processed alongside, so output is the same for any
//! batching or order.
//!
//! Families: [`photometric`] (Brightness, Saturate, Color Quantization, Dark), [`weather`]
//! (Snow, Fog, Rain), [`blur`] (Motion Blur, Zoom Blur, the Gaussian), [`occlusion`] (Water
//! Splash, Lens Obstacle, Camera Crash, Frame Lost). Bit Error and H.265 go through a real
//! codec (ffmpeg) and are not planned here.

pub mod bench;
pub(crate) mod blur;
pub mod codec;
pub(crate) mod config;
mod frames;
pub mod gpu;
mod inflight;
pub(crate) mod occlusion;
pub(crate) mod output;
pub(crate) mod photometric;
pub(crate) mod qa;
pub mod recipe;
pub mod rng;
pub mod run;
pub mod sheet;
pub mod weather;

use image::RgbImage;
use serde_json::{json, Value};

pub use config::CorruptConfig;
use rng::Key;
pub use run::{run, CorruptSummary, Options};

use crate::{Error, Result};

/// The 15 corruptions, in DriveBench's category order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Corruption {
    Brightness,
    Dark,
    Snow,
    Fog,
    Rain,
    WaterSplash,
    LensObstacle,
    CameraCrash,
    FrameLost,
    Saturate,
    MotionBlur,
    ZoomBlur,
    BitError,
    ColorQuant,
    H265,
}

impl Corruption {
    pub const ALL: [Corruption; 15] = [
        Corruption::Brightness,
        Corruption::Dark,
        Corruption::Snow,
        Corruption::Fog,
        Corruption::Rain,
        Corruption::WaterSplash,
        Corruption::LensObstacle,
        Corruption::CameraCrash,
        Corruption::FrameLost,
        Corruption::Saturate,
        Corruption::MotionBlur,
        Corruption::ZoomBlur,
        Corruption::BitError,
        Corruption::ColorQuant,
        Corruption::H265,
    ];

    /// The snake_case name used in configs, folders and tables.
    pub fn name(self) -> &'static str {
        match self {
            Corruption::Brightness => "brightness",
            Corruption::Dark => "dark",
            Corruption::Snow => "snow",
            Corruption::Fog => "fog",
            Corruption::Rain => "rain",
            Corruption::WaterSplash => "water_splash",
            Corruption::LensObstacle => "lens_obstacle",
            Corruption::CameraCrash => "camera_crash",
            Corruption::FrameLost => "frame_lost",
            Corruption::Saturate => "saturate",
            Corruption::MotionBlur => "motion_blur",
            Corruption::ZoomBlur => "zoom_blur",
            Corruption::BitError => "bit_error",
            Corruption::ColorQuant => "color_quant",
            Corruption::H265 => "h265",
        }
    }

    /// The name DriveBench's paper uses (for questions and people).
    pub fn display_name(self) -> &'static str {
        match self {
            Corruption::Brightness => "Brightness",
            Corruption::Dark => "Dark",
            Corruption::Snow => "Snow",
            Corruption::Fog => "Fog",
            Corruption::Rain => "Rain",
            Corruption::WaterSplash => "Water Splash",
            Corruption::LensObstacle => "Lens Obstacle",
            Corruption::CameraCrash => "Camera Crash",
            Corruption::FrameLost => "Frame Lost",
            Corruption::Saturate => "Saturate",
            Corruption::MotionBlur => "Motion Blur",
            Corruption::ZoomBlur => "Zoom Blur",
            Corruption::BitError => "Bit Error",
            Corruption::ColorQuant => "Color Quantization",
            Corruption::H265 => "H.265 Compression",
        }
    }

    /// Position in [`Corruption::ALL`], part of the generator key.
    pub fn index(self) -> u32 {
        Corruption::ALL.iter().position(|c| *c == self).unwrap_or(0) as u32
    }

    /// Parses a name (snake_case, case-insensitive; `-` and spaces accepted for `_`).
    pub fn parse(s: &str) -> Result<Corruption> {
        let norm = s.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        Corruption::ALL
            .into_iter()
            .find(|c| c.name() == norm)
            .ok_or_else(|| {
                let names: Vec<&str> = Corruption::ALL.iter().map(|c| c.name()).collect();
                Error::invalid(
                    "corruption",
                    format!(
                        "unknown corruption {s:?}; expected one of {} or all",
                        names.join(", ")
                    ),
                )
            })
    }

    /// Bit Error and H.265 run through ffmpeg rather than a kernel.
    pub fn is_codec(self) -> bool {
        matches!(self, Corruption::BitError | Corruption::H265)
    }
}

/// Index of severity 1..=5 into a config list (clamped: severities are validated where they
/// enter, so this never sees another value from user data).
pub(crate) fn sev_index(severity: u8) -> usize {
    usize::from(severity.clamp(1, 5) - 1)
}

/// Checks a user-given severity.
pub(crate) fn check_severity(severity: u8) -> Result<u8> {
    if (1..=5).contains(&severity) {
        Ok(severity)
    } else {
        Err(Error::invalid(
            "severity",
            format!("severity {severity} is not in 1..=5"),
        ))
    }
}

/// [0, 1] → u8 by ×255 and truncation, as the reference's `np.uint8` does; NaN gives 0.
/// `max`/`min` rather than `clamp` (which keeps NaN) and an unchecked conversion: the same
/// result for every input, in a form the compiler turns into vector instructions (a checked
/// `as` conversion stays one value at a time).
#[inline]
#[allow(clippy::manual_clamp)] // clamp keeps NaN, which the unchecked conversion must not see
pub(crate) fn to_u8(v: f32) -> u8 {
    let x = v.max(0.0).min(1.0) * 255.0;
    // SAFETY: `max` returns 0 for NaN, so x is finite and in [0, 255].
    (unsafe { x.to_int_unchecked::<i32>() }) as u8
}

/// An f32 parameter as the shortest decimal that reads back as it (0.4, not
/// 0.4000000059604645), for the JSON metadata.
pub(crate) fn j32(x: f32) -> f64 {
    format!("{x}").parse().unwrap_or(f64::from(x))
}

/// One view of a frame: an image and where it comes from.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    pub image_id: &'a str,
    pub camera: &'a str,
    pub image: &'a RgbImage,
}

/// What happens to one view.
#[derive(Debug, Clone)]
pub enum Plan {
    /// The view is left as it is (not selected by a view-selective corruption).
    Unchanged,
    Pixel(photometric::HsvParams),
    Dark(photometric::DarkPlan, Key),
    Snow(weather::SnowPlan),
    Fog(weather::FogPlan),
    Rain(weather::RainPlan),
    Splash(occlusion::SplashPlan),
    Lens(occlusion::LensPlan),
    Motion(blur::MotionPlan),
    Zoom(blur::ZoomPlan),
}

/// A view's plan and the metadata recorded for it.
#[derive(Debug, Clone)]
pub struct ViewPlan {
    pub plan: Plan,
    /// Whether the view's pixels change.
    pub applied: bool,
    /// The parameters and random draws, as written to `corruptions.arrow`.
    pub params: Value,
}

/// Plans `corruption` at `severity` for the views of one frame (`frame_id` keys the per-frame
/// decisions: which views are splashed, obstructed, crashed or lost).
pub fn plan_frame(
    cfg: &CorruptConfig,
    corruption: Corruption,
    severity: u8,
    seed: u64,
    frame_id: &str,
    views: &[View<'_>],
) -> Result<Vec<ViewPlan>> {
    let severity = check_planned(corruption, severity)?;
    let cameras: Vec<&str> = views.iter().map(|v| v.camera).collect();
    let frame = select_views(cfg, corruption, severity, seed, frame_id, &cameras);
    views
        .iter()
        .enumerate()
        .map(|(i, view)| plan_in_frame(cfg, corruption, severity, seed, &frame, i, view))
        .collect()
}

/// The plan of one view of a frame, as [`plan_frame`] makes it for that view when the frame's
/// views are `cameras` (every camera of the frame, in any order): the frame-level choices
/// (which views are splashed, obstructed, crashed or lost) depend only on the frame's cameras,
/// not on their pixels, so one view can be corrupted alone and match the whole frame's run.
pub(crate) fn plan_view(
    cfg: &CorruptConfig,
    corruption: Corruption,
    severity: u8,
    seed: u64,
    frame_id: &str,
    cameras: &[&str],
    view: &View<'_>,
) -> Result<ViewPlan> {
    let severity = check_planned(corruption, severity)?;
    let Some(index) = cameras.iter().position(|c| *c == view.camera) else {
        return Err(Error::input(
            view.image_id,
            "camera",
            format!(
                "camera {} is not one of the frame's {cameras:?}",
                view.camera
            ),
        ));
    };
    let frame = select_views(cfg, corruption, severity, seed, frame_id, cameras);
    plan_in_frame(cfg, corruption, severity, seed, &frame, index, view)
}

/// A severity and a corruption the kernels can plan (codecs run through ffmpeg).
fn check_planned(corruption: Corruption, severity: u8) -> Result<u8> {
    let severity = check_severity(severity)?;
    if corruption.is_codec() {
        return Err(Error::invalid(
            corruption.name(),
            "is a codec corruption; it runs through ffmpeg (corrupt::codec), not a kernel",
        ));
    }
    Ok(severity)
}

/// View `index` of a frame whose frame-level decision is `frame` ([`select_views`]).
fn plan_in_frame(
    cfg: &CorruptConfig,
    corruption: Corruption,
    severity: u8,
    seed: u64,
    frame: &(Option<Vec<usize>>, Value),
    index: usize,
    view: &View<'_>,
) -> Result<ViewPlan> {
    let (selected, frame_meta) = frame;
    let (w, h) = view.image.dimensions();
    if w == 0 || h == 0 {
        return Err(Error::input(
            view.image_id,
            "image",
            "empty image (0 pixels)",
        ));
    }
    let key = Key::new(seed, view.image_id, corruption.index(), severity);
    let plan = if selected.as_ref().is_none_or(|s| s.contains(&index)) {
        view_plan(cfg, corruption, severity, key, view)
    } else {
        Plan::Unchanged
    };
    let mut params = plan_json(&plan);
    if let (Value::Object(p), Value::Object(f)) = (&mut params, frame_meta) {
        p.insert("frame".into(), Value::Object(f.clone()));
    }
    Ok(ViewPlan {
        applied: !matches!(plan, Plan::Unchanged),
        plan,
        params,
    })
}

/// The views a frame-level decision selects (None: all views) and the decision's record,
/// which every view's params repeat under `frame`. Only the view-selective corruptions
/// decide anything here; their draws are keyed by the frame, not by a view.
fn select_views(
    cfg: &CorruptConfig,
    corruption: Corruption,
    severity: u8,
    seed: u64,
    frame_id: &str,
    views: &[&str],
) -> (Option<Vec<usize>>, Value) {
    let ci = corruption.index();
    let frame_key = Key::new(seed, frame_id, ci | 0x100, severity);
    let n = views.len();
    let front = views.iter().position(|v| *v == "CAM_FRONT").unwrap_or(0);
    let names =
        |idx: &[usize]| -> Vec<String> { idx.iter().map(|i| views[*i].to_string()).collect() };
    match corruption {
        Corruption::WaterSplash => {
            let v = occlusion::select_views(frame_key, n, front, cfg.water_splash.extra_views);
            let m = json!({"views": names(&v)});
            (Some(v), m)
        }
        Corruption::LensObstacle => {
            let v = occlusion::select_views(frame_key, n, front, cfg.lens_obstacle.extra_views);
            let m = json!({"views": names(&v)});
            (Some(v), m)
        }
        Corruption::CameraCrash => {
            let cc = &cfg.camera_crash;
            let key = if cc.same_cameras_every_frame {
                Key::new(seed, "", ci | 0x100, severity)
            } else {
                frame_key
            };
            // Crash indices refer to the frame's cameras in canonical order when present.
            let order = canonical_order(views);
            let picks = occlusion::crash_views(key, n, cc.draws[sev_index(severity)]);
            let v: Vec<usize> = picks
                .iter()
                .filter_map(|i| order.get(*i).copied())
                .collect();
            let m = json!({"crashed": names(&v), "count": v.len(),
                           "same_cameras_every_frame": cc.same_cameras_every_frame});
            (Some(v), m)
        }
        Corruption::FrameLost => {
            let order = canonical_order(views);
            let p = cfg.frame_lost.probability[sev_index(severity)];
            let picks = occlusion::lost_views(frame_key, n, p);
            let v: Vec<usize> = picks
                .iter()
                .filter_map(|i| order.get(*i).copied())
                .collect();
            let m = json!({"lost": names(&v), "count": v.len(), "probability": p});
            (Some(v), m)
        }
        _ => (None, Value::Null),
    }
}

/// The plan of one selected, non-empty view, its random draws keyed by `key` (the view's
/// own key).
pub(crate) fn view_plan(
    cfg: &CorruptConfig,
    corruption: Corruption,
    severity: u8,
    key: Key,
    view: &View<'_>,
) -> Plan {
    let (w, h) = view.image.dimensions();
    match corruption {
        Corruption::Brightness => Plan::Pixel(photometric::HsvParams::brightness(cfg, severity)),
        Corruption::Saturate => Plan::Pixel(photometric::HsvParams::saturate(cfg, severity)),
        Corruption::ColorQuant => Plan::Pixel(photometric::HsvParams::color_quant(cfg, severity)),
        Corruption::CameraCrash | Corruption::FrameLost => {
            Plan::Pixel(photometric::HsvParams::black())
        }
        Corruption::Dark => Plan::Dark(
            photometric::DarkPlan::of_image(cfg, severity, key, view.image),
            key,
        ),
        Corruption::Snow => Plan::Snow(weather::SnowPlan::new(cfg, severity, key, w, h)),
        Corruption::Fog => Plan::Fog(weather::FogPlan::new(cfg, severity, key, w, h)),
        Corruption::Rain => Plan::Rain(weather::RainPlan::new(cfg, severity, key, w, h)),
        Corruption::WaterSplash => {
            Plan::Splash(occlusion::SplashPlan::new(cfg, severity, key, w, h))
        }
        Corruption::LensObstacle => Plan::Lens(occlusion::LensPlan::new(cfg, severity, key, w, h)),
        Corruption::MotionBlur => Plan::Motion(blur::MotionPlan::new(cfg, severity, key, w, h)),
        Corruption::ZoomBlur => Plan::Zoom(blur::ZoomPlan::new(cfg, severity, w, h)),
        Corruption::BitError | Corruption::H265 => Plan::Unchanged,
    }
}

/// View indices in nuScenes camera order (CAM_FRONT, CAM_FRONT_LEFT, CAM_FRONT_RIGHT,
/// CAM_BACK, CAM_BACK_LEFT, CAM_BACK_RIGHT), other cameras after them by name.
fn canonical_order(views: &[&str]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..views.len()).collect();
    idx.sort_by_key(|i| (camera_rank(views[*i]), views[*i].to_string(), *i));
    idx
}

/// nuScenes' camera order, in which a frame's views are listed (and crash and loss draws
/// index them).
pub const CAMERA_ORDER: [&str; 6] = [
    "CAM_FRONT",
    "CAM_FRONT_LEFT",
    "CAM_FRONT_RIGHT",
    "CAM_BACK",
    "CAM_BACK_LEFT",
    "CAM_BACK_RIGHT",
];

/// A camera's place in [`CAMERA_ORDER`] (other cameras after those six).
pub(crate) fn camera_rank(camera: &str) -> usize {
    CAMERA_ORDER
        .iter()
        .position(|o| *o == camera)
        .unwrap_or(CAMERA_ORDER.len())
}

fn plan_json(plan: &Plan) -> Value {
    match plan {
        Plan::Unchanged => json!({"applied": false}),
        Plan::Pixel(p) => p.to_json(),
        Plan::Dark(p, _) => p.to_json(),
        Plan::Snow(p) => p.to_json(),
        Plan::Fog(p) => p.to_json(),
        Plan::Rain(p) => p.to_json(),
        Plan::Splash(p) => p.to_json(),
        Plan::Lens(p) => p.to_json(),
        Plan::Motion(p) => p.to_json(),
        Plan::Zoom(p) => p.to_json(),
    }
}

/// Applies `plan` to `img` on the CPU (the twins of the kernels).
pub fn apply_cpu(img: &RgbImage, plan: &Plan) -> RgbImage {
    match plan {
        Plan::Unchanged => img.clone(),
        Plan::Pixel(p) => photometric::pixel_cpu(img, p),
        Plan::Dark(p, key) => photometric::dark_cpu(img, p, *key),
        Plan::Snow(p) => weather::snow_cpu(img, p),
        Plan::Fog(p) => weather::fog_cpu(img, p),
        Plan::Rain(p) => weather::rain_cpu(img, p),
        Plan::Splash(p) => occlusion::splash_cpu(img, p),
        Plan::Lens(p) => occlusion::lens_cpu(img, p),
        Plan::Motion(p) => blur::motion_cpu(img, &p.taps),
        Plan::Zoom(p) => blur::zoom_cpu(img, &p.layers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;

    #[test]
    fn to_u8_truncates_clamps_and_maps_nan_to_zero() {
        let mut xs: Vec<f32> = (0..=40_000).map(|i| i as f32 / 20_000.0 - 0.5).collect();
        xs.extend([
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            1.0,
            f32::MIN_POSITIVE,
        ]);
        xs.extend((0..=255).map(|k| k as f32 / 255.0));
        for x in xs {
            let want = if x.is_nan() {
                0
            } else {
                (x.clamp(0.0, 1.0) * 255.0) as u8
            };
            assert_eq!(to_u8(x), want, "{x}");
        }
    }

    #[test]
    fn default_config_loads_with_drivebench_severities() {
        let c = crate::corrupt::config::test_config();
        let got: Vec<u8> = Corruption::ALL
            .iter()
            .map(|k| c.default_severity(*k))
            .collect();
        assert_eq!(got, vec![4, 4, 4, 5, 5, 4, 5, 4, 4, 5, 4, 4, 2, 4, 4]);
    }

    #[test]
    fn bad_values_are_refused_by_key() {
        let bad = config::DEFAULT_TOML.replace(
            "kernel = [7, 15, 21, 31, 51]",
            "kernel = [8, 15, 21, 31, 51]",
        );
        let e = CorruptConfig::from_toml(&bad, std::path::Path::new("x.toml")).err();
        let msg = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("water_splash.kernel[0]"), "{msg}");
        let bad = config::DEFAULT_TOML.replace("default_severity = 2", "default_severity = 6");
        let msg = CorruptConfig::from_toml(&bad, std::path::Path::new("x.toml"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("bit_error.default_severity"), "{msg}");
    }

    #[test]
    fn frame_lost_and_crash_are_black_and_recorded() {
        let c = crate::corrupt::config::test_config();
        let img = RgbImage::from_pixel(8, 8, image::Rgb([9, 99, 199]));
        let cams = CAMERA_ORDER;
        let views: Vec<View<'_>> = cams
            .iter()
            .map(|c| View {
                image_id: c,
                camera: c,
                image: &img,
            })
            .collect();
        for corr in [Corruption::FrameLost, Corruption::CameraCrash] {
            let plans =
                plan_frame(&c, corr, 4, 3, "frame-1", &views).unwrap_or_else(|e| panic!("{e}"));
            let count = plans.iter().filter(|p| p.applied).count();
            assert_eq!(plans[0].params["frame"]["count"], json!(count));
            for p in &plans {
                let out = apply_cpu(&img, &p.plan);
                if p.applied {
                    assert!(out.iter().all(|v| *v == 0));
                } else {
                    assert_eq!(out, img);
                }
            }
        }
        // Probability 1 loses every view.
        let all = config::DEFAULT_TOML.replace("0.83333333]", "1.0]");
        let c1 = CorruptConfig::from_toml(&all, std::path::Path::new("x"))
            .unwrap_or_else(|e| panic!("{e}"));
        let plans = plan_frame(&c1, Corruption::FrameLost, 5, 0, "f", &views)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(plans.iter().all(|p| p.applied));
    }

    #[test]
    fn one_view_planned_alone_is_planned_as_in_its_frame() {
        let c = crate::corrupt::config::test_config();
        let cams = CAMERA_ORDER;
        let imgs: Vec<RgbImage> = (0..6u8)
            .map(|k| {
                RgbImage::from_fn(24, 16, |x, y| {
                    image::Rgb([x as u8 * 9, y as u8 * 13, k * 40])
                })
            })
            .collect();
        let views: Vec<View<'_>> = cams
            .iter()
            .zip(&imgs)
            .map(|(c, image)| View {
                image_id: c,
                camera: c,
                image,
            })
            .collect();
        for corr in Corruption::ALL.into_iter().filter(|c| !c.is_codec()) {
            for sev in 1..=5 {
                let frame = plan_frame(&c, corr, sev, 11, "scene/3", &views)
                    .unwrap_or_else(|e| panic!("{e}"));
                for (v, want) in views.iter().zip(&frame) {
                    let one = plan_view(&c, corr, sev, 11, "scene/3", &cams, v)
                        .unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(one.params, want.params, "{corr:?} {sev} {}", v.camera);
                    assert_eq!(one.applied, want.applied);
                    assert_eq!(
                        apply_cpu(v.image, &one.plan),
                        apply_cpu(v.image, &want.plan),
                        "{corr:?} {sev} {}",
                        v.camera
                    );
                }
            }
        }
        let stranger = View {
            image_id: "x",
            camera: "CAM_ROOF",
            image: &imgs[0],
        };
        assert!(plan_view(&c, Corruption::Fog, 5, 1, "f", &cams, &stranger).is_err());
    }

    #[test]
    fn names_round_trip() {
        for c in Corruption::ALL {
            assert_eq!(Corruption::parse(c.name()).ok(), Some(c));
        }
        assert!(Corruption::parse("Water Splash").is_ok());
        assert!(Corruption::parse("nope").is_err());
    }
}
