//! The sections of a build config below `BuildConfig` itself: `[robustness]`, `[input]`,
//! `[stages]`, `[families.<f>]`, the per-stage sections, `[balance.<f>]`, `[release]` and
//! `[report]`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::corrupt::Corruption;
use crate::formats::Format;
use crate::gpu::DeviceChoice;
use crate::qa::record::Family;
use crate::Result;
/// `[robustness]`: which families' questions are asked again, under which corruptions and
/// severities, and how many per family. The release also writes the text-only control, the
/// third of DriveBench's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RobustnessSection {
    /// `"all"` (every enabled family that can be re-asked) or a list of families.
    #[serde(default = "all_word")]
    pub families: Words,
    /// `"all"`, a comma-separated list, or a list of corruption names.
    #[serde(default = "all_corruptions")]
    pub corruptions: Parsed<Words, Vec<Corruption>>,
    /// `"default"` (DriveBench's severity per corruption), `"all"` or a list of severities 1–5.
    #[serde(default = "default_severities")]
    pub severities: Parsed<SeverityChoice, crate::robustness::Severities>,
    /// Rows re-asked per family: a seeded draw stratified over question type and answer, the
    /// same rows in every setting.
    pub rows: usize,
    /// Deprecated: the release draws the robustness splits, on `[release] device`. Still read
    /// when that key is left out, so older configs keep their meaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceChoice>,
    /// The corruption settings (default: `[corrupt].config`, else the built-in ones).
    #[serde(default)]
    pub config: Option<PathBuf>,
}

/// A word (`"all"`, or names separated by commas) or a list of names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Words {
    One(String),
    List(Vec<String>),
}

impl Words {
    /// The names given, or None for `all`.
    pub fn names(&self) -> Option<Vec<String>> {
        let list: Vec<String> = match self {
            Words::One(s) if s.trim().eq_ignore_ascii_case("all") => return None,
            Words::One(s) => s.split(',').map(|w| w.trim().to_string()).collect(),
            Words::List(v) => v.iter().map(|w| w.trim().to_string()).collect(),
        };
        Some(list)
    }
}

fn all_word() -> Words {
    Words::One("all".into())
}

/// A config value checked and parsed when the config is read, kept beside the form it was
/// written in: checkpoint keys and the manifest's copy of the config show the user's words
/// (so a config's hash does not change with this type), while every reader gets the value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed<W, T> {
    pub written: W,
    pub value: T,
}

/// How a written form becomes its typed value; the error names the key.
pub(crate) trait FromWritten<W>: Sized {
    fn from_written(written: &W) -> std::result::Result<Self, String>;
}

impl<W, T: FromWritten<W>> Parsed<W, T> {
    pub fn new(written: W) -> std::result::Result<Self, String> {
        let value = T::from_written(&written)?;
        Ok(Parsed { written, value })
    }

    /// For defaults, whose written form is known to parse.
    fn known(written: W, value: T) -> Self {
        Parsed { written, value }
    }
}

impl<W: Serialize, T> Serialize for Parsed<W, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.written.serialize(s)
    }
}

impl<'de, W: Deserialize<'de>, T: FromWritten<W>> Deserialize<'de> for Parsed<W, T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Parsed::new(W::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// `robustness.corruptions`.
impl FromWritten<Words> for Vec<Corruption> {
    fn from_written(w: &Words) -> std::result::Result<Self, String> {
        match w.names() {
            None => Ok(Corruption::ALL.to_vec()),
            Some(list) => list
                .iter()
                .map(|c| Corruption::parse(c))
                .collect::<Result<_>>()
                .map_err(|e| format!("robustness.corruptions: {}", e.report())),
        }
    }
}

/// `corrupt.corruptions`.
impl FromWritten<String> for Vec<Corruption> {
    fn from_written(w: &String) -> std::result::Result<Self, String> {
        crate::corrupt::run::parse_corruptions(w)
            .map_err(|e| format!("corrupt.corruptions: {}", e.report()))
    }
}

/// `corrupt.severity`.
impl FromWritten<String> for crate::corrupt::run::Severities {
    fn from_written(w: &String) -> std::result::Result<Self, String> {
        crate::corrupt::run::parse_severities(w)
            .map_err(|e| format!("corrupt.severity: {}", e.report()))
    }
}

fn all_corruptions() -> Parsed<Words, Vec<Corruption>> {
    Parsed::known(all_word(), Corruption::ALL.to_vec())
}

/// `"default"` or a list of severities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum SeverityChoice {
    Word(String),
    List(Vec<u8>),
}

fn default_severities() -> Parsed<SeverityChoice, crate::robustness::Severities> {
    Parsed::known(
        SeverityChoice::Word("default".into()),
        crate::robustness::Severities::Default,
    )
}

/// `robustness.severities`.
impl FromWritten<SeverityChoice> for crate::robustness::Severities {
    fn from_written(w: &SeverityChoice) -> std::result::Result<Self, String> {
        use crate::robustness::Severities;
        match w {
            SeverityChoice::Word(w) if w.trim().eq_ignore_ascii_case("default") => {
                Ok(Severities::Default)
            }
            SeverityChoice::Word(w) if w.trim().eq_ignore_ascii_case("all") => {
                Ok(Severities::Listed(vec![1, 2, 3, 4, 5]))
            }
            SeverityChoice::Word(w) => Err(format!(
                "robustness.severities = {w:?}: expected \"default\", \"all\" or a list of 1–5"
            )),
            SeverityChoice::List(v) if v.is_empty() => {
                Err("robustness.severities is an empty list".into())
            }
            SeverityChoice::List(v) => match v.iter().find(|k| !(1..=5).contains(*k)) {
                Some(k) => Err(format!("robustness.severities: {k} is not in 1..=5")),
                None => Ok(Severities::Listed(v.clone())),
            },
        }
    }
}

impl RobustnessSection {
    /// The families re-asked: those named, or every enabled family that can be.
    pub fn families(&self, stages: &Stages) -> std::result::Result<Vec<String>, String> {
        let on = stages.families();
        let enabled = |f: &str| on.contains(&f);
        let mut out = match self.families.names() {
            None => crate::robustness::FAMILIES
                .iter()
                .filter(|f| enabled(f))
                .map(|f| f.to_string())
                .collect(),
            Some(list) => {
                for f in &list {
                    crate::robustness::check_family(f)
                        .map_err(|e| format!("robustness.families: {e}"))?;
                    if !enabled(f) {
                        return Err(format!(
                            "robustness.families names {f}, whose stage is not enabled in \
                             [stages]"
                        ));
                    }
                }
                list
            }
        };
        out.sort();
        out.dedup();
        if out.is_empty() {
            return Err(
                "robustness: no family to re-ask (enable egomotion, metavqa, \
                        stsbench or sig in [stages])"
                    .into(),
            );
        }
        Ok(out)
    }

    /// The corruptions named.
    pub fn corruptions(&self) -> &[Corruption] {
        &self.corruptions.value
    }

    /// The severities chosen.
    pub fn severities(&self) -> &crate::robustness::Severities {
        &self.severities.value
    }
}

pub(super) fn default_split() -> String {
    "test".into()
}

/// Where the scenes come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub(crate) enum InputConfig {
    /// The built-in synthetic corpus, written in one of the source layouts, then ingested.
    Synth {
        scenes: usize,
        #[serde(default)]
        duration_s: Option<f64>,
        #[serde(default)]
        width: Option<u32>,
        #[serde(default)]
        height: Option<u32>,
        /// The layout it is written in (`nuscenes`, `waymo-v2` or `bench2drive`).
        #[serde(default)]
        format: Format,
        /// Which cameras get their ~12 Hz sweeps under `sweeps/` in the nuScenes layout:
        /// `"used"` (the default) writes those of the camera ego-motion reads its clips from
        /// (its poses and frames), when that stage runs; `"all"` writes every camera's, as
        /// `drivegen synth` does. No other stage reads a sweep, and sweeps are four camera
        /// images in five.
        #[serde(default)]
        camera_sweeps: CameraSweeps,
    },
    /// A nuScenes dataroot.
    Nuscenes {
        root: PathBuf,
        #[serde(default)]
        version: Option<String>,
        /// Refuse files that symbolic links lead out of the root (`ingest --strict-links`).
        #[serde(default)]
        strict_links: bool,
    },
    /// A Waymo Open Dataset v2 split: the folder holding `camera_image/`, `vehicle_pose/`, …
    Waymo {
        root: PathBuf,
        #[serde(default)]
        strict_links: bool,
    },
    /// A Bench2Drive route folder, or a folder of routes (up to two levels down).
    Carla {
        root: PathBuf,
        #[serde(default)]
        strict_links: bool,
    },
    /// An existing scene store (reused as it is).
    Store { path: PathBuf },
}

/// Which camera sweeps a build's synthetic corpus gets (see [`InputConfig::Synth`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CameraSweeps {
    #[default]
    Used,
    All,
}

/// Which stages run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Stages {
    pub egomotion: bool,
    pub visibility: bool,
    pub som: bool,
    pub corrupt: bool,
    /// STSBench scenarios mined from tracks (and the map layers when the source has them).
    pub stsbench: bool,
    /// SIG bird's-eye grids and their relation questions (needs visibility).
    pub sig: bool,
    /// MetaVQA spatial, embodied and grounding questions on Set-of-Mark images (needs
    /// visibility).
    pub metavqa: bool,
}

/// Each QA family and the `[stages]` key (and step) that writes it, in family name order.
const FAMILY_STAGES: [(Family, &str); 5] = [
    (Family::Drivebench, "corrupt"),
    (Family::Egodyn, "egomotion"),
    (Family::Metavqa, "metavqa"),
    (Family::Sig, "sig"),
    (Family::Stsbench, "stsbench"),
];

impl Stages {
    /// Whether the `[stages]` key `stage` is on.
    fn on(&self, stage: &str) -> bool {
        match stage {
            "corrupt" => self.corrupt,
            "egomotion" => self.egomotion,
            "metavqa" => self.metavqa,
            "sig" => self.sig,
            "stsbench" => self.stsbench,
            _ => false,
        }
    }

    /// The QA families the enabled stages write, in name order.
    pub fn families(&self) -> Vec<&'static str> {
        FAMILY_STAGES
            .iter()
            .filter(|(_, stage)| self.on(stage))
            .map(|(f, _)| f.name())
            .collect()
    }

    /// The `[stages]` key (and step) that writes `family`.
    pub(crate) fn stage_of(&self, family: &str) -> &'static str {
        FAMILY_STAGES
            .iter()
            .find(|(f, _)| f.name() == family)
            .map_or("unknown", |(_, stage)| stage)
    }
}

/// What a build promises about one family's place in the release.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct FamilyChecks {
    /// The fewest rows the release may publish; fewer stops the build, naming the step that
    /// dropped them (0 lets the family vanish). Default
    /// [`DEFAULT_MIN_ROWS`](crate::chain::honesty::DEFAULT_MIN_ROWS).
    pub min_rows: Option<usize>,
    /// How far above chance the family's best held-out blind baseline may be; more stops the
    /// build with the audit table. Default
    /// [`DEFAULT_BLIND_MARGIN`](crate::chain::honesty::DEFAULT_BLIND_MARGIN).
    pub blind_margin: Option<f64>,
}

/// A stage configured by its own TOML file (none: the built-in default).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct ConfigFile {
    pub config: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct StsStage {
    pub config: Option<PathBuf>,
    /// The map-expansion folder (default: `<source root>/maps/expansion`).
    pub maps: Option<PathBuf>,
}

/// Where a stage runs: one meaning of `auto` for the build and every command.

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct DeviceStage {
    pub config: Option<PathBuf>,
    pub device: DeviceChoice,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct CorruptStage {
    pub config: Option<PathBuf>,
    pub device: DeviceChoice,
    /// `all` or a comma-separated list of names.
    pub corruptions: Parsed<String, Vec<Corruption>>,
    /// `default` (DriveBench's per corruption), `all`, or 1–5.
    pub severity: Parsed<String, crate::corrupt::run::Severities>,
    /// Only the first N keyframes of each scene (none: all).
    pub frames_per_scene: Option<usize>,
}

impl Default for CorruptStage {
    fn default() -> Self {
        Self {
            config: None,
            device: DeviceChoice::Auto,
            corruptions: Parsed::known("all".into(), Corruption::ALL.to_vec()),
            severity: Parsed::known("default".into(), crate::corrupt::run::Severities::Default),
            frames_per_scene: None,
        }
    }
}

/// EgoDyn's Algorithm 1 and the letter/type balancing for one family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FamilyBalance {
    /// Items (clips or frames) to select.
    pub target: usize,
    /// `paper` or `released` (see `drivegen balance --help`).
    #[serde(default = "default_mode")]
    pub mode: String,
    #[serde(default)]
    pub type_cap: Option<usize>,
    #[serde(default)]
    pub balance_letters: bool,
    /// Maximum items per source.
    #[serde(default)]
    pub source_caps: BTreeMap<String, usize>,
    /// Flatten each question type's answers: no answer keeps more than this many times the
    /// rows of the type's rarest answer (1.0: uniform), so that the most frequent answer of a
    /// type is no better a guess than chance.
    #[serde(default)]
    pub answer_ratio: Option<f64>,
    /// Take out of every row the options no row of its question type has as its answer (a
    /// model that has seen the type's questions rules them out without looking); a row left
    /// with one option is dropped.
    #[serde(default)]
    pub prune_options: bool,
    /// The family's quota: at most this many rows, taken evenly across its types and answers.
    #[serde(default)]
    pub max_rows: Option<usize>,
    /// Drop rows that blind baselines answer from the text alone until the family's best blind
    /// baseline is within this margin of chance (e.g. 0.05); the dropped rows and why are in
    /// the family's `blind_filter.jsonl`.
    #[serde(default)]
    pub max_blind_excess: Option<f64>,
}

fn default_mode() -> String {
    "paper".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct ReleaseSection {
    pub rows_per_shard: usize,
    pub row_group_rows: usize,
    /// A row group also ends once its distinct images reach this many MiB (bounds memory).
    pub row_group_mib: usize,
    /// `embed` or `paths`.
    pub images: String,
    pub text_only_controls: bool,
    /// Where the release draws its marked and corrupted images (`auto`, `gpu`, `cpu`); left
    /// out, the deprecated `[robustness] device` if given, else `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceChoice>,
}

impl Default for ReleaseSection {
    fn default() -> Self {
        Self {
            rows_per_shard: crate::release::DEFAULT_ROWS_PER_SHARD,
            row_group_rows: crate::release::DEFAULT_ROW_GROUP_ROWS,
            row_group_mib: crate::release::DEFAULT_ROW_GROUP_MIB,
            images: "embed".into(),
            text_only_controls: false,
            device: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct ReportSection {
    /// Marked images shown in the report's grid; 0 shows none (the grid is left out).
    pub marked_images: usize,
    /// Also write the release viewer (`drivegen view`) into `WORK/viewer`. Off by default: it
    /// holds a copy of every published image.
    pub viewer: bool,
    /// A model's answers (`drivegen score`'s JSON lines) to score in the report: with
    /// robustness splits, a plot per family of accuracy per setting beside clean, text-only
    /// and chance.
    pub predictions: Option<PathBuf>,
}

impl Default for ReportSection {
    fn default() -> Self {
        Self {
            marked_images: 6,
            viewer: false,
            predictions: None,
        }
    }
}
