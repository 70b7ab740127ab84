//! The build config (`configs/releases/*.toml`): what `drivegen build` makes, from which input,
//! with which stages and options. Relative paths are relative to the working folder the build
//! runs in. Unknown keys are errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::qa::record::Family;
use crate::{Error, Result};

/// The everything-config, embedded: what `drivegen demo` builds.
pub const EVERYTHING_TOML: &str = include_str!("../../configs/releases/everything.toml");

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildConfig {
    /// The dataset's name on its card.
    pub name: String,
    /// Seeds every random draw (options, labels, corruptions).
    pub seed: u64,
    /// The split the questions go to.
    #[serde(default = "default_split")]
    pub split: String,
    /// Where the release goes (`--out` overrides).
    pub out: PathBuf,
    /// Where intermediate tables go (`--work` overrides); default `<out>.work`.
    #[serde(default)]
    pub work: Option<PathBuf>,
    pub input: InputConfig,
    pub stages: Stages,
    #[serde(default)]
    pub egomotion: ConfigFile,
    #[serde(default)]
    pub visibility: DeviceStage,
    #[serde(default)]
    pub som: DeviceStage,
    #[serde(default)]
    pub corrupt: CorruptStage,
    #[serde(default)]
    pub stsbench: StsStage,
    #[serde(default)]
    pub sig: ConfigFile,
    #[serde(default)]
    pub metavqa: DeviceStage,
    /// Balancing per family (`[balance.egodyn]`, …); families without a section are released
    /// as generated.
    #[serde(default)]
    pub balance: BTreeMap<String, FamilyBalance>,
    /// What the build promises per family (`[families.sig]`, …): its fewest rows and its blind
    /// margin; families without a section get the defaults.
    #[serde(default)]
    pub families: BTreeMap<String, FamilyChecks>,
    #[serde(default)]
    pub release: ReleaseSection,
    /// Corruption-robustness splits: some families' questions asked again under each
    /// corruption (none: no robustness splits).
    #[serde(default)]
    pub robustness: Option<RobustnessSection>,
    #[serde(default)]
    pub report: ReportSection,
}

/// `[robustness]`: which families' questions are asked again, under which corruptions and
/// severities, and how many per family. The release also writes the text-only control, the
/// third of DriveBench's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobustnessSection {
    /// `"all"` (every enabled family that can be re-asked) or a list of families.
    #[serde(default = "all_word")]
    pub families: Words,
    /// `"all"`, a comma-separated list, or a list of corruption names.
    #[serde(default = "all_word")]
    pub corruptions: Words,
    /// `"default"` (DriveBench's severity per corruption) or a list of severities 1–5.
    #[serde(default = "default_severities")]
    pub severities: SeverityChoice,
    /// Rows re-asked per family: a seeded draw stratified over question type and answer, the
    /// same rows in every setting.
    pub rows: usize,
    /// Where the corruptions run (`auto`, `gpu`, `cpu`).
    #[serde(default)]
    pub device: DeviceChoice,
    /// The corruption settings (default: `[corrupt].config`, else the built-in ones).
    #[serde(default)]
    pub config: Option<PathBuf>,
}

/// A word (`"all"`, or names separated by commas) or a list of names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Words {
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

/// `"default"` or a list of severities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SeverityChoice {
    Word(String),
    List(Vec<u8>),
}

fn default_severities() -> SeverityChoice {
    SeverityChoice::Word("default".into())
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
    pub fn corruptions(&self) -> Result<Vec<crate::corrupt::Corruption>> {
        match self.corruptions.names() {
            None => Ok(crate::corrupt::Corruption::ALL.to_vec()),
            Some(list) => list
                .iter()
                .map(|c| crate::corrupt::Corruption::parse(c))
                .collect(),
        }
    }

    /// The severities chosen.
    pub fn severities(&self) -> std::result::Result<crate::robustness::Severities, String> {
        match &self.severities {
            SeverityChoice::Word(w) if w.trim().eq_ignore_ascii_case("default") => {
                Ok(crate::robustness::Severities::Default)
            }
            SeverityChoice::Word(w) if w.trim().eq_ignore_ascii_case("all") => {
                Ok(crate::robustness::Severities::Listed(vec![1, 2, 3, 4, 5]))
            }
            SeverityChoice::Word(w) => Err(format!(
                "robustness.severities = {w:?}: expected \"default\", \"all\" or a list of 1–5"
            )),
            SeverityChoice::List(v) if v.is_empty() => {
                Err("robustness.severities is an empty list".into())
            }
            SeverityChoice::List(v) => match v.iter().find(|k| !(1..=5).contains(*k)) {
                Some(k) => Err(format!("robustness.severities: {k} is not in 1..=5")),
                None => Ok(crate::robustness::Severities::Listed(v.clone())),
            },
        }
    }
}

fn default_split() -> String {
    "test".into()
}

/// Where the scenes come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum InputConfig {
    /// The built-in synthetic corpus, written in one of the source layouts, then ingested.
    Synth {
        scenes: usize,
        #[serde(default)]
        duration_s: Option<f64>,
        #[serde(default)]
        width: Option<u32>,
        #[serde(default)]
        height: Option<u32>,
        #[serde(default)]
        format: SynthFormat,
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
pub enum CameraSweeps {
    #[default]
    Used,
    All,
}

/// The layout the synthetic corpus is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SynthFormat {
    #[default]
    Nuscenes,
    WaymoV2,
    Bench2drive,
}

/// Which stages run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Stages {
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
    pub fn stage_of(&self, family: &str) -> &'static str {
        FAMILY_STAGES
            .iter()
            .find(|(f, _)| f.name() == family)
            .map_or("unknown", |(_, stage)| stage)
    }
}

/// What a build promises about one family's place in the release.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FamilyChecks {
    /// The fewest rows the release may publish; fewer stops the build, naming the step that
    /// dropped them (0 lets the family vanish). Default
    /// [`DEFAULT_MIN_ROWS`](super::honesty::DEFAULT_MIN_ROWS).
    pub min_rows: Option<usize>,
    /// How far above chance the family's best held-out blind baseline may be; more stops the
    /// build with the audit table. Default
    /// [`DEFAULT_BLIND_MARGIN`](super::honesty::DEFAULT_BLIND_MARGIN).
    pub blind_margin: Option<f64>,
}

/// A stage configured by its own TOML file (none: the built-in default).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConfigFile {
    pub config: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StsStage {
    pub config: Option<PathBuf>,
    /// The map-expansion folder (default: `<source root>/maps/expansion`).
    pub maps: Option<PathBuf>,
}

/// Where a stage runs: one meaning of `auto` for the build and every command.
pub use crate::gpu::DeviceChoice;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeviceStage {
    pub config: Option<PathBuf>,
    pub device: DeviceChoice,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CorruptStage {
    pub config: Option<PathBuf>,
    pub device: DeviceChoice,
    /// `all` or a comma-separated list of names.
    pub corruptions: String,
    /// `default` (DriveBench's per corruption), `all`, or 1–5.
    pub severity: String,
    /// Only the first N keyframes of each scene (none: all).
    pub frames_per_scene: Option<usize>,
}

impl Default for CorruptStage {
    fn default() -> Self {
        Self {
            config: None,
            device: DeviceChoice::Auto,
            corruptions: "all".into(),
            severity: "default".into(),
            frames_per_scene: None,
        }
    }
}

/// EgoDyn's Algorithm 1 and the letter/type balancing for one family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyBalance {
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
pub struct ReleaseSection {
    pub rows_per_shard: usize,
    pub row_group_rows: usize,
    /// A row group also ends once its distinct images reach this many MiB (bounds memory).
    pub row_group_mib: usize,
    /// `embed` or `paths`.
    pub images: String,
    pub text_only_controls: bool,
}

impl Default for ReleaseSection {
    fn default() -> Self {
        Self {
            rows_per_shard: crate::release::DEFAULT_ROWS_PER_SHARD,
            row_group_rows: crate::release::DEFAULT_ROW_GROUP_ROWS,
            row_group_mib: crate::release::DEFAULT_ROW_GROUP_MIB,
            images: "embed".into(),
            text_only_controls: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReportSection {
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

impl BuildConfig {
    pub fn load(path: &Path) -> Result<Self> {
        let cfg: Self = crate::config::load_toml(path)?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    pub fn from_toml(text: &str, name: &Path) -> Result<Self> {
        let cfg: Self = crate::config::parse_toml(text, name)?;
        cfg.validate(name)?;
        Ok(cfg)
    }

    /// The fewest rows `family` may publish.
    pub fn min_rows(&self, family: &str) -> usize {
        self.families
            .get(family)
            .and_then(|f| f.min_rows)
            .unwrap_or(super::honesty::DEFAULT_MIN_ROWS)
    }

    /// How far above chance `family`'s blind baselines may be.
    pub fn blind_margin(&self, family: &str) -> f64 {
        self.families
            .get(family)
            .and_then(|f| f.blind_margin)
            .unwrap_or(super::honesty::DEFAULT_BLIND_MARGIN)
    }

    /// The embedded everything-config.
    pub fn everything() -> Result<Self> {
        Self::from_toml(
            EVERYTHING_TOML,
            Path::new("configs/releases/everything.toml"),
        )
    }

    fn validate(&self, file: &Path) -> Result<()> {
        let bad = |detail: String| {
            Err(Error::Config {
                file: file.to_path_buf(),
                detail,
            })
        };
        if self.out.as_os_str().is_empty() {
            return bad("out is empty: name the release folder".into());
        }
        if self.work.as_ref().is_some_and(|w| w.as_os_str().is_empty()) {
            return bad("work is empty: name the work folder, or leave it out".into());
        }
        if let InputConfig::Synth {
            scenes,
            duration_s,
            width,
            height,
            ..
        } = &self.input
        {
            if *scenes == 0 {
                return bad("input.scenes must be at least 1".into());
            }
            if width == &Some(0) || height == &Some(0) {
                return bad(
                    "input.width and input.height must be at least 1 (leave them out for the \
                     default size)"
                        .into(),
                );
            }
            if duration_s.is_some_and(|d| d.is_nan() || d <= 0.0) {
                return bad(format!(
                    "input.duration_s must be positive (leave it out for the default), got {}",
                    duration_s.unwrap_or_default()
                ));
            }
        }
        if self.corrupt.frames_per_scene == Some(0) {
            return bad(
                "corrupt.frames_per_scene must be at least 1 (leave it out for every frame)".into(),
            );
        }
        if self.release.rows_per_shard == 0
            || self.release.row_group_rows == 0
            || self.release.row_group_mib == 0
        {
            return bad(
                "release.rows_per_shard, row_group_rows and row_group_mib must be at least 1"
                    .into(),
            );
        }
        if !matches!(self.release.images.as_str(), "embed" | "paths") {
            return bad(format!(
                "release.images = {:?}: expected \"embed\" or \"paths\"",
                self.release.images
            ));
        }
        for (family, b) in &self.balance {
            if Family::parse(family).is_none() {
                return bad(format!(
                    "[balance.{family}]: unknown family (known: {})",
                    crate::qa::record::FAMILIES.join(", ")
                ));
            }
            if b.answer_ratio.is_some_and(|r| r < 1.0) {
                return bad(format!(
                    "balance.{family}.answer_ratio must be at least 1 (1 is uniform)"
                ));
            }
            if b.max_blind_excess.is_some_and(|m| !(0.0..1.0).contains(&m)) {
                return bad(format!(
                    "balance.{family}.max_blind_excess must lie in [0, 1)"
                ));
            }
            if b.target == 0 {
                return bad(format!(
                    "[balance.{family}] target must be at least 1: a target of 0 selects \
                     nothing and drops the family. Leave [balance.{family}] out to release the \
                     family as generated"
                ));
            }
            if b.max_rows == Some(0) {
                return bad(format!("balance.{family}.max_rows must be at least 1"));
            }
            if b.type_cap == Some(0) {
                return bad(format!(
                    "balance.{family}.type_cap must be at least 1 (leave it out for no cap)"
                ));
            }
            if let Some((source, _)) = b.source_caps.iter().find(|(_, &c)| c == 0) {
                return bad(format!(
                    "balance.{family}.source_caps.{source} must be at least 1 (leave the source \
                     out for no cap)"
                ));
            }
            if !matches!(b.mode.as_str(), "paper" | "released") {
                return bad(format!(
                    "balance.{family}.mode = {:?}: expected \"paper\" or \"released\"",
                    b.mode
                ));
            }
        }
        for (family, f) in &self.families {
            if Family::parse(family).is_none() {
                return bad(format!(
                    "[families.{family}]: unknown family (known: {})",
                    crate::qa::record::FAMILIES.join(", ")
                ));
            }
            if !self.stages.families().contains(&family.as_str()) {
                return bad(format!(
                    "[families.{family}]: its stage ({}) is not enabled in [stages]",
                    self.stages.stage_of(family)
                ));
            }
            if f.blind_margin
                .is_some_and(|m| !m.is_finite() || !(0.0..=1.0).contains(&m))
            {
                return bad(format!(
                    "families.{family}.blind_margin must lie in [0, 1], got {}",
                    f.blind_margin.unwrap_or_default()
                ));
            }
        }
        if let Some(r) = &self.robustness {
            if r.rows == 0 {
                return bad("robustness.rows must be at least 1".into());
            }
            if self.release.images != "embed" {
                return bad(
                    "[robustness] needs release.images = \"embed\": its corrupted images are \
                     drawn by the release and exist only in its shards"
                        .into(),
                );
            }
            if let Err(e) = r.families(&self.stages) {
                return bad(e);
            }
            if let Err(e) = r.corruptions() {
                return bad(format!("robustness.corruptions: {}", e.report()));
            }
            if let Err(e) = r.severities() {
                return bad(e);
            }
        }
        if let Err(e) = crate::corrupt::run::parse_corruptions(&self.corrupt.corruptions) {
            return bad(format!("corrupt.corruptions: {}", e.report()));
        }
        if let Err(e) = crate::corrupt::run::parse_severities(&self.corrupt.severity) {
            return bad(format!("corrupt.severity: {}", e.report()));
        }
        Ok(())
    }

    /// Where intermediate tables go.
    pub fn work_dir(&self) -> PathBuf {
        self.work.clone().unwrap_or_else(|| {
            let mut s = self.out.clone().into_os_string();
            s.push(".work");
            PathBuf::from(s)
        })
    }

    /// A short stable hash of a serialisable section (what a checkpoint depends on).
    pub fn hash_of<T: Serialize>(v: &T) -> String {
        crate::config::short_hash(&serde_json::to_string(v).unwrap_or_default())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_build_config_parses() {
        let everything = BuildConfig::everything().unwrap();
        assert!(everything.stages.metavqa && everything.stages.corrupt);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/releases");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                BuildConfig::load(&p).unwrap();
                n += 1;
            }
        }
        assert!(n >= 4, "{n} configs in {}", dir.display());
    }

    #[test]
    fn robustness_sections_are_checked_by_key() {
        let with = |section: &str| {
            BuildConfig::from_toml(
                &format!(
                    "name = \"x\"\nseed = 1\nout = \"o\"\n[input]\nkind = \"synth\"\nscenes = 1\n\
                     [stages]\nsig = true\nvisibility = true\ncorrupt = true\n[robustness]\n{section}"
                ),
                Path::new("r.toml"),
            )
        };
        let c = with("rows = 5").unwrap();
        let r = c.robustness.as_ref().unwrap();
        assert_eq!(r.families(&c.stages).unwrap(), ["sig"]);
        assert_eq!(r.corruptions().unwrap().len(), 15);
        let c = with("rows = 5\ncorruptions = [\"fog\", \"snow\"]\nseverities = [3, 1]").unwrap();
        let r = c.robustness.as_ref().unwrap();
        assert_eq!(r.corruptions().unwrap().len(), 2);
        assert_eq!(
            r.severities().unwrap(),
            crate::robustness::Severities::Listed(vec![3, 1])
        );
        for (bad, key) in [
            ("rows = 0", "robustness.rows"),
            ("rows = 5\nfamilies = [\"drivebench\"]", "drivebench"),
            ("rows = 5\nfamilies = [\"metavqa\"]", "metavqa"),
            ("rows = 5\nfamilies = [\"nope\"]", "nope"),
            ("rows = 5\ncorruptions = \"fog,smog\"", "smog"),
            ("rows = 5\nseverities = [0]", "robustness.severities"),
            ("rows = 5\nseverities = []", "robustness.severities"),
            ("rows = 5\nseverities = \"strong\"", "strong"),
            ("rows = 5\nsetting = 1", "setting"),
        ] {
            let e = with(bad).unwrap_err().report().to_string();
            assert!(e.contains("r.toml") && e.contains(key), "{bad}: {e}");
        }
    }

    #[test]
    fn input_kinds_parse() {
        let with = |input: &str| {
            BuildConfig::from_toml(
                &format!("name = \"x\"\nseed = 1\nout = \"o\"\n[input]\n{input}\n[stages]\n"),
                Path::new("t.toml"),
            )
        };
        let c = with("kind = \"waymo\"\nroot = \"w\"").unwrap();
        let (root, strict_links) = ("w".into(), false);
        assert_eq!(c.input, InputConfig::Waymo { root, strict_links });
        let c = with("kind = \"carla\"\nroot = \"r\"\nstrict_links = true").unwrap();
        let (root, strict_links) = ("r".into(), true);
        assert_eq!(c.input, InputConfig::Carla { root, strict_links });
        let c = with("kind = \"nuscenes\"\nroot = \"n\"\nstrict_links = true").unwrap();
        assert!(matches!(
            c.input,
            InputConfig::Nuscenes {
                strict_links: true,
                ..
            }
        ));
        let e = with("kind = \"nuscenes\"\nroot = \"n\"\nstrict_link = true")
            .unwrap_err()
            .report()
            .to_string();
        assert!(e.contains("t.toml") && e.contains("strict_link"), "{e}");
        let c = with("kind = \"synth\"\nscenes = 1\nformat = \"waymo-v2\"").unwrap();
        assert!(matches!(
            c.input,
            InputConfig::Synth {
                format: SynthFormat::WaymoV2,
                ..
            }
        ));
        let c = with("kind = \"synth\"\nscenes = 1\nformat = \"bench2drive\"").unwrap();
        assert!(matches!(
            c.input,
            InputConfig::Synth {
                format: SynthFormat::Bench2drive,
                ..
            }
        ));
        let c = with("kind = \"synth\"\nscenes = 1").unwrap();
        assert!(matches!(
            c.input,
            InputConfig::Synth {
                format: SynthFormat::Nuscenes,
                ..
            }
        ));
        let e = with("kind = \"synth\"\nscenes = 1\nformat = \"kitti\"")
            .unwrap_err()
            .report()
            .to_string();
        assert!(e.contains("t.toml") && e.contains("kitti"), "{e}");
        let e = with("kind = \"waymo\"").unwrap_err().report().to_string();
        assert!(e.contains("root"), "{e}");
    }
}
