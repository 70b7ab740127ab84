//! Corruption-robustness splits (`docs/robustness.md`): a family's questions asked again, word
//! for word, with their images under each DriveBench corruption, as DriveBench's study does
//! (the same questions clean, under 15 corruptions and text-only).
//!
//! The release does the work, in its own pass: after the clean split it draws the rows to
//! re-ask ([`select`]: seeded, stratified over question type and answer, the same rows in
//! every setting), then writes one split per setting, corrupting each shown image from its
//! source camera image when the row group is written ([`corrupt_view`]), with the seed rules of
//! `drivegen corrupt`, so a published image is the one the corrupt stage makes of that view.
//! Nothing is written between the stages: a setting costs a pass over its rows, not a folder.

pub(crate) mod select;

use std::sync::Arc;

use image::RgbImage;

use crate::corrupt::{CorruptConfig, Corruption};
use crate::qa::{Family, QaRecord};
use crate::{Error, Result};

/// The families whose questions can be re-asked. DriveBench's own questions ask which
/// corruption an image shows; under another corruption they would have no answer.
pub(crate) const FAMILIES: [&str; 4] = [
    Family::Egodyn.name(),
    Family::Metavqa.name(),
    Family::Stsbench.name(),
    Family::Sig.name(),
];

/// One corrupted setting: a corruption at a severity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Setting {
    /// The split suffix and the shard's `setting` column: the corruption's name, with
    /// `_s{severity}` when the config names severities.
    pub name: String,
    #[serde(serialize_with = "corruption_name")]
    pub corruption: Corruption,
    pub severity: u8,
}

fn corruption_name<S: serde::Serializer>(
    c: &Corruption,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(c.name())
}

/// Which severities each corruption is asked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Severities {
    /// DriveBench's one per corruption (`default_severity` of the corruption settings); the
    /// splits are named after the corruption alone.
    Default,
    /// These, for every corruption; the splits are named `{corruption}_s{k}`.
    Listed(Vec<u8>),
}

/// What the release re-asks.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RobustnessOptions {
    /// The families re-asked, in name order.
    pub families: Vec<String>,
    pub settings: Vec<Setting>,
    /// Rows re-asked per family (all of a family's rows when it has fewer).
    pub rows: usize,
    /// Seeds the draw of rows and every corruption.
    pub seed: u64,
    /// The corruption settings (`configs/corruptions.toml` or the config's own file).
    #[serde(skip)]
    pub config: Arc<CorruptConfig>,
}

impl RobustnessOptions {
    /// The settings of `corruptions` at `severities`, in DriveBench's corruption order.
    pub fn settings(
        corruptions: &[Corruption],
        severities: &Severities,
        cfg: &CorruptConfig,
    ) -> Result<Vec<Setting>> {
        let mut cs = corruptions.to_vec();
        cs.sort();
        cs.dedup();
        let mut out = Vec::new();
        for c in cs {
            match severities {
                Severities::Default => out.push(Setting {
                    name: c.name().to_string(),
                    corruption: c,
                    severity: cfg.default_severity(c),
                }),
                Severities::Listed(list) => {
                    let mut list = list.clone();
                    list.sort_unstable();
                    list.dedup();
                    for k in list {
                        crate::corrupt::check_severity(k)?;
                        out.push(Setting {
                            name: format!("{}_s{k}", c.name()),
                            corruption: c,
                            severity: k,
                        });
                    }
                }
            }
        }
        if out.is_empty() {
            return Err(Error::invalid(
                "robustness",
                "no setting: name at least one corruption and one severity",
            ));
        }
        Ok(out)
    }

    /// Whether `family` is re-asked.
    pub fn covers(&self, family: &str) -> bool {
        self.families.iter().any(|f| f == family)
    }
}

/// Refuses a family that cannot be re-asked, saying why.
pub(crate) fn check_family(f: &str) -> std::result::Result<(), String> {
    match Family::parse(f) {
        Some(Family::Drivebench) => Err(
            "drivebench questions ask which corruption an image shows; they cannot be \
                    asked again under another one"
                .into(),
        ),
        Some(k) if FAMILIES.contains(&k.name()) => Ok(()),
        _ => Err(format!(
            "unknown family {f:?} (known: {})",
            FAMILIES.join(", ")
        )),
    }
}

/// `all` or a comma-separated list of families (each checked by [`check_family`]).
pub(crate) fn parse_families(s: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = if s.trim().eq_ignore_ascii_case("all") {
        FAMILIES.iter().map(|f| f.to_string()).collect()
    } else {
        s.split(',').map(|f| f.trim().to_string()).collect()
    };
    for f in &out {
        check_family(f).map_err(|e| Error::invalid("robustness families", e))?;
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// `default`, `all` or a comma-separated list of severities 1–5.
pub(crate) fn parse_severities(s: &str) -> Result<Severities> {
    match s.trim().to_ascii_lowercase().as_str() {
        "default" => Ok(Severities::Default),
        "all" => Ok(Severities::Listed(vec![1, 2, 3, 4, 5])),
        list => list
            .split(',')
            .map(|k| {
                let v: u8 = k.trim().parse().map_err(|_| {
                    Error::invalid(
                        "robustness severities",
                        format!("{k:?}: expected default, all or severities 1–5"),
                    )
                })?;
                crate::corrupt::check_severity(v)
            })
            .collect::<Result<Vec<u8>>>()
            .map(Severities::Listed),
    }
}

/// Camera Crash and Frame Lost black out whole views (the key is kept, as DriveBench keeps it):
/// the scorer reports them apart from the corruptions that degrade a picture.
pub(crate) fn is_blackout(c: Corruption) -> bool {
    matches!(c, Corruption::CameraCrash | Corruption::FrameLost)
}

/// The split of setting `s` beside main split `main`.
pub(crate) fn split_name(main: &str, s: &Setting) -> String {
    format!("{main}_{}", s.name)
}

/// The `setting` column of the clean split and of the text-only control.
pub(crate) const CLEAN: &str = "clean";
pub(crate) const TEXT_ONLY: &str = "text_only";

/// The path a corrupted image is published at: the corrupt stage's layout,
/// `{corruption}/{severity}/{the clean image's path}`.
pub(crate) fn image_path(s: &Setting, clean: &str) -> String {
    format!("{}/{}/{clean}", s.corruption.name(), s.severity)
}

/// `base` (a clean row as published) asked again under `s`: the same question, options, key
/// and letter; its own id (from the clean row's id and the setting, so it is stable and
/// unique across splits) and the setting's corruption. The images are set by the caller.
pub(crate) fn reasked(base: &QaRecord, s: &Setting) -> QaRecord {
    let mut r = base.clone();
    r.qa_id = crate::qa::record::qa_id(
        &base.family,
        &base.question_type,
        &[&base.qa_id],
        Some(&s.name),
        base.seed,
    );
    r.corruption = Some(s.corruption.name().to_string());
    r.severity = Some(s.severity);
    r
}

/// Where a view sits in its frame, as the corrupt stage sees frames: a keyframe's views are
/// the frame's keyframe camera images in [`crate::corrupt::CAMERA_ORDER`], keyed by
/// `{scene}/{frame_idx}`; any other image is a frame of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameOf {
    pub frame_id: String,
    pub cameras: Vec<String>,
    pub camera: String,
    pub image_id: String,
}

/// `img` (the decoded source of one view) under setting `s`: the pixels `drivegen corrupt`
/// gives that view with `seed`. Codec corruptions run ffmpeg (they take no seed).
pub(crate) fn corrupt_view(
    cfg: &CorruptConfig,
    seed: u64,
    s: &Setting,
    view: &FrameOf,
    img: &RgbImage,
    gpu: Option<&crate::gpu::Gpu>,
) -> Result<RgbImage> {
    if s.corruption.is_codec() {
        let (out, _) =
            crate::corrupt::codec::apply_codec(cfg, s.corruption, s.severity, img, &view.image_id)?;
        return Ok(out);
    }
    let cameras: Vec<&str> = view.cameras.iter().map(String::as_str).collect();
    let v = crate::corrupt::View {
        image_id: &view.image_id,
        camera: &view.camera,
        image: img,
    };
    let plan = crate::corrupt::plan_view(
        cfg,
        s.corruption,
        s.severity,
        seed,
        &view.frame_id,
        &cameras,
        &v,
    )?;
    Ok(match gpu {
        Some(g) => crate::corrupt::gpu::apply_gpu(g, &[(img, &plan.plan)])?
            .pop()
            .ok_or_else(|| Error::Internal("the GPU returned no image".into()))?,
        None => crate::corrupt::apply_cpu(img, &plan.plan),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::StageConfig;

    #[test]
    fn settings_are_named_after_the_corruption_or_its_severity() {
        let cfg = CorruptConfig::default_config().unwrap();
        let s = RobustnessOptions::settings(
            &[Corruption::Fog, Corruption::Brightness],
            &Severities::Default,
            &cfg,
        )
        .unwrap();
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["brightness", "fog"]);
        assert_eq!(s[1].severity, cfg.default_severity(Corruption::Fog));
        let s = RobustnessOptions::settings(
            &[Corruption::Fog],
            &Severities::Listed(vec![5, 1, 5]),
            &cfg,
        )
        .unwrap();
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["fog_s1", "fog_s5"]);
        assert!(RobustnessOptions::settings(
            &[Corruption::Fog],
            &Severities::Listed(vec![6]),
            &cfg
        )
        .is_err());
        assert_eq!(split_name("test", &s[0]), "test_fog_s1");
        assert_eq!(
            image_path(&s[1], "CAM_FRONT/a.jpg"),
            "fog/5/CAM_FRONT/a.jpg"
        );
    }

    #[test]
    fn a_reasked_row_keeps_its_question_and_key_under_a_new_id() {
        let base = QaRecord {
            qa_id: "sig-0123456789abcdef".into(),
            family: "sig".into(),
            question_type: "t".into(),
            choices: vec!["a".into(), "b".into()],
            answer_index: 1,
            answer_letter: "B".into(),
            answer: "b".into(),
            seed: 3,
            ..Default::default()
        };
        let s = Setting {
            name: "fog".into(),
            corruption: Corruption::Fog,
            severity: 5,
        };
        let r = reasked(&base, &s);
        assert_ne!(r.qa_id, base.qa_id);
        assert!(r.qa_id.starts_with("sig-"));
        assert_eq!(r.qa_id, reasked(&base, &s).qa_id);
        assert_eq!(
            (r.corruption.as_deref(), r.severity),
            (Some("fog"), Some(5))
        );
        let same = |r: &QaRecord| {
            (
                r.question(),
                r.choices.clone(),
                r.answer_index,
                r.answer_letter.clone(),
            )
        };
        assert_eq!(same(&r), same(&base));
    }
}
