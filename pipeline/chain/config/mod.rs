//! The build config (`configs/releases/*.toml`): what `drivegen build` makes, from which input,
//! with which stages and options. Relative paths are relative to the working folder the build
//! runs in. Unknown keys are errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::gpu::DeviceChoice;

use crate::{Error, Result};

mod sections;

pub(crate) use sections::*;

/// The everything-config, embedded: what `drivegen demo` builds.
pub(crate) const EVERYTHING_TOML: &str = include_str!("../../../configs/releases/everything.toml");

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BuildConfig {
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

impl BuildConfig {
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

    /// The device the release step draws on: `[release] device`, else the deprecated
    /// `[robustness] device`, else `auto`.
    pub(crate) fn release_device(&self) -> DeviceChoice {
        self.release
            .device
            .or(self.robustness.as_ref().and_then(|r| r.device))
            .unwrap_or_default()
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
            format,
            ..
        } = &self.input
        {
            if !format.has_cameras() {
                return bad(format!(
                    "input.format = \"{format}\" writes no camera images, and every family but \
                     the ego-motion one needs them; use nuscenes, waymo-v2 or bench2drive"
                ));
            }
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
            if crate::qa::record::Family::parse(family).is_none() {
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
            if crate::qa::record::Family::parse(family).is_none() {
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
    pub(crate) fn hash_of<T: Serialize>(v: &T) -> String {
        crate::config::short_hash(&serde_json::to_string(v).unwrap_or_default())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::formats::Format;

    #[test]
    fn every_shipped_build_config_parses() {
        let everything = BuildConfig::everything().unwrap();
        assert!(everything.stages.metavqa && everything.stages.corrupt);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/releases");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                // As `drivegen build` reads it.
                BuildConfig::from_toml(&std::fs::read_to_string(&p).unwrap(), &p).unwrap();
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
        assert_eq!(r.corruptions().len(), 15);
        let c = with("rows = 5\ncorruptions = [\"fog\", \"snow\"]\nseverities = [3, 1]").unwrap();
        let r = c.robustness.as_ref().unwrap();
        assert_eq!(r.corruptions().len(), 2);
        assert_eq!(
            r.severities(),
            &crate::robustness::Severities::Listed(vec![3, 1])
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
                format: Format::WaymoV2,
                ..
            }
        ));
        let c = with("kind = \"synth\"\nscenes = 1\nformat = \"bench2drive\"").unwrap();
        assert!(matches!(
            c.input,
            InputConfig::Synth {
                format: Format::Bench2drive,
                ..
            }
        ));
        let c = with("kind = \"synth\"\nscenes = 1").unwrap();
        assert!(matches!(
            c.input,
            InputConfig::Synth {
                format: Format::Nuscenes,
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

    #[test]
    fn the_release_device_is_its_own_key_and_falls_back_to_the_old_robustness_one() {
        let base = BuildConfig::everything().expect("the built-in config loads");
        assert_eq!(base.release_device(), DeviceChoice::Auto);
        // The shipped robustness config, with its `[release] device` line swapped and a line
        // added at the end of its `[robustness]` section.
        let shipped = include_str!("../../../configs/releases/robustness.toml");
        let text = |release: &str, robustness: &str| {
            shipped
                .replace("device = \"auto\"\n", &format!("{release}\n"))
                .replace("rows = 40\n", &format!("rows = 40\n{robustness}\n"))
        };
        let load = |t: String| BuildConfig::from_toml(&t, Path::new("t.toml")).expect("loads");
        let c = load(text("device = \"cpu\"", "device = \"gpu\""));
        assert_eq!(c.release_device(), DeviceChoice::Cpu);
        let c = load(text("", "device = \"cpu\""));
        assert_eq!(c.release_device(), DeviceChoice::Cpu);
        let c = load(text("", ""));
        assert_eq!(c.release_device(), DeviceChoice::Auto);
    }
}
