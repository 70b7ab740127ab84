//! SIG questions (family `sig`): relation filling over the full label sets (SRPF) and
//! multiple choice, options always listed in their order (directions clockwise, distances near
//! to far) with distractors that do not give the answer away ([`mc_options`]).

use serde_json::json;

use super::config::SigConfig;
use super::frame::{Relation, SigFrame, SELF_KEY};
use super::grid::{DIRECTIONAL, PROXIMAL};
use crate::qa::record::{qa_id, set_answer, shuffle_seed, QaRecord, SplitMix64};
use crate::qa::{Layout, Prompt};
use crate::Result;

pub(crate) const FAMILY: &str = crate::qa::Family::Sig.name();

/// Where the image comes from.
pub struct ImageRef<'a> {
    pub source: &'a str,
    pub scene_id: &'a str,
    pub frame_idx: u32,
    pub camera: &'a str,
    pub camera_frame_id: &'a str,
}

/// A question plus the relation it asks about.
#[derive(Debug, Clone)]
pub struct SigQuestion {
    pub record: QaRecord,
    pub subject: String,
    pub object: String,
    pub relation: &'static str,
    pub label_id: u8,
}

fn name(key: &str) -> String {
    if key == SELF_KEY {
        "the ego vehicle".into()
    } else {
        key.to_string()
    }
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// Option ids for a question about label `correct` of `m` (8 directional, cyclic; 5 proximal,
/// linear), `n` of them, in the order the prompt shows them; `pick` draws from the question's
/// own seed.
///
/// The distractors are chosen so that the set of options says nothing about which one is
/// right (the paper's near-miss neighbours would: the four nearest labels of a circle are
/// centred on the answer). Directions take a run of `n` neighbours around the circle with the
/// answer at a uniformly drawn place in it, listed clockwise from the run's start; distances
/// take `n - 1` other bins uniformly, listed near to far. Either way each option of a given set
/// is the answer equally often when the answers are balanced.
pub fn mc_options(correct: u8, n: usize, cyclic: bool, pick: &mut SplitMix64) -> Vec<u8> {
    let m: u8 = if cyclic { 8 } else { 5 };
    let n = n.clamp(1, usize::from(m)) as u8;
    if cyclic {
        let at = pick.below(u64::from(n)) as u8;
        let start = (correct + m - at) % m;
        return (0..n).map(|k| (start + k) % m).collect();
    }
    let mut others: Vec<u8> = (0..m).filter(|&i| i != correct).collect();
    for i in (1..others.len()).rev() {
        let j = pick.below(i as u64 + 1) as usize;
        others.swap(i, j);
    }
    others.truncate(usize::from(n) - 1);
    others.push(correct);
    others.sort_unstable();
    others
}

/// All `m` labels in their order: proximal near to far; directional clockwise from a drawn
/// start.
fn all_options(m: u8, cyclic: bool, pick: &mut SplitMix64) -> Vec<u8> {
    let start = if cyclic {
        pick.below(u64::from(m)) as u8
    } else {
        0
    };
    (0..m).map(|k| (start + k) % m).collect()
}

/// The questions of one image.
pub fn frame_questions(
    cfg: &SigConfig,
    img: &ImageRef<'_>,
    sig: &SigFrame,
    seed: u64,
    config_hash: &str,
) -> Result<Vec<SigQuestion>> {
    let pool = question_pool(sig, seed, img);
    let ask = FrameAsk {
        cfg,
        img,
        sig,
        seed,
        config_hash,
        head: preamble(cfg, img),
    };
    let mut out = Vec::new();
    for (k, r) in pool
        .iter()
        .cycle()
        .take(cfg.questions.max_per_frame.min(pool.len() * 4))
        .enumerate()
    {
        // Pass m over the pairs asks pair i its ((i + m) mod 4)-th kind, so no pair is asked
        // the same kind twice.
        let (m, i) = (k / pool.len().max(1), k % pool.len().max(1));
        let kind = [
            "directional_fill",
            "proximal_fill",
            "directional_mc",
            "proximal_mc",
        ][(i + m) % 4];
        out.push(ask.question(r, kind)?);
    }
    Ok(out)
}

/// The pairs asked about: a vehicle w.r.t. the ego or an earlier vehicle, with a direction,
/// shuffled by a seed of the image's own so each image asks about its pairs in its own order.
fn question_pool<'s>(sig: &'s SigFrame, seed: u64, img: &ImageRef<'_>) -> Vec<&'s Relation> {
    let index = |k: &str| {
        if k == SELF_KEY {
            0
        } else {
            sig.objects
                .iter()
                .position(|o| o.key == k)
                .map_or(0, |p| p + 1)
        }
    };
    let mut pool: Vec<&Relation> = sig
        .relations
        .iter()
        .filter(|r| r.directional.is_some() && index(&r.subject) > index(&r.object))
        .collect();
    let mut rng = SplitMix64::new(shuffle_seed(&format!(
        "sig-pairs\u{0}{seed}\u{0}{}",
        img.camera_frame_id
    )));
    for i in (1..pool.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        pool.swap(i, j);
    }
    pool
}

/// The text every question of the image starts with: how the grid, the vehicle names and
/// the direction and distance labels are to be read.
fn preamble(cfg: &SigConfig, img: &ImageRef<'_>) -> String {
    let b = cfg.relations.proximal_bins;
    format!(
        "Assume the bird's-eye view of the scene in front of {} is a {}x{} grid: columns run from left to right and rows from near (row 0, where the ego vehicle is) to far. Vehicles are named by their type and their left-to-right order in the image (the left-most is 1). \
         Directions compare two vehicles' cells seen from above with the far rows ahead: \"at the front of\" means the first lies within 22.5 degrees of straight ahead of the second (in farther rows), \"at the back of\" straight behind it (in nearer rows), \"at the left of\" and \"at the right of\" to its sides, and \"at the front left of\", \"at the front right of\", \"at the back left of\" and \"at the back right of\" in the 45-degree sectors between those. \
         Distances are counted in grid cells between the two cells: \"adjacent to\" is under {} cells, \"close to\" {} to {}, \"at a distance from\" {} to {}, \"far from\" {} to {}, and \"far away from\" {} cells or more.",
        img.camera, cfg.grid.columns, cfg.grid.rows, b[0], b[0], b[1], b[1], b[2], b[2], b[3], b[3]
    )
}

/// What every question of one image shares.
struct FrameAsk<'a> {
    cfg: &'a SigConfig,
    img: &'a ImageRef<'a>,
    sig: &'a SigFrame,
    seed: u64,
    config_hash: &'a str,
    /// The [`preamble`].
    head: String,
}

impl FrameAsk<'_> {
    /// The track of the vehicle `k` names (None for the ego).
    fn track(&self, k: &str) -> Option<String> {
        self.sig
            .objects
            .iter()
            .find(|o| o.key == k)
            .map(|o| o.track_id.clone())
    }

    /// The question of `kind` about relation `r`, its options drawn from a seed of the pair
    /// and kind.
    fn question(&self, r: &Relation, kind: &'static str) -> Result<SigQuestion> {
        let (cfg, img, seed) = (self.cfg, self.img, self.seed);
        let directional = kind.starts_with("directional");
        let (labels, correct): (&[&str], u8) = if directional {
            (&DIRECTIONAL, r.directional.unwrap_or(0))
        } else {
            (&PROXIMAL, r.proximal)
        };
        let pair_ref = format!("{}|{}", r.subject, r.object);
        let mut pick = SplitMix64::new(shuffle_seed(&format!(
            "sig-options\u{0}{seed}\u{0}{}\u{0}{pair_ref}\u{0}{kind}",
            img.camera_frame_id
        )));
        let ids: Vec<u8> = if kind.ends_with("fill") {
            all_options(labels.len() as u8, directional, &mut pick)
        } else {
            mc_options(correct, cfg.questions.mc_options, directional, &mut pick)
        };
        let canonical: Vec<String> = ids
            .iter()
            .map(|&i| labels[i as usize].to_string())
            .collect();
        let at = ids.iter().position(|&i| i == correct).unwrap_or(0);
        let (s, o) = (name(&r.subject), name(&r.object));
        let mut rec = self.record(r, kind, &pair_ref, directional);
        // Ordered options stay in order: a full circle of directions is rotated when the
        // release balances letters; a run of directions and distances never move, their
        // letters being uniform by construction (`qa::option_order`).
        set_answer(&mut rec, &canonical, at, false)?;
        let ask = match kind {
            "directional_fill" | "proximal_fill" => {
                format!("Fill in the blank: \"{} is ___ {o}.\"", cap(&s))
            }
            "directional_mc" => format!("Where is {s} relative to {o}? {} is ...", cap(&s)),
            _ => format!("How far is {s} from {o}? {} is ...", cap(&s)),
        };
        rec.prompt = Prompt::new(Layout::Sig, ask)
            .preamble(self.head.clone())
            .postamble("Answer with the letter of the correct option.");
        Ok(SigQuestion {
            record: rec,
            subject: r.subject.clone(),
            object: r.object.clone(),
            relation: if directional {
                "directional"
            } else {
                "proximal"
            },
            label_id: correct,
        })
    }

    /// The record of a question about `r`, before its options and prompt: ids, provenance,
    /// the marked vehicles, and the rule, parameters and evidence behind its answer.
    fn record(&self, r: &Relation, kind: &str, pair_ref: &str, directional: bool) -> QaRecord {
        let (cfg, img, seed, config_hash) = (self.cfg, self.img, self.seed, self.config_hash);
        QaRecord {
            qa_id: qa_id(FAMILY, kind, &[img.source, img.scene_id, img.camera_frame_id, pair_ref], None, seed),
            family: FAMILY.into(),
            question_type: kind.into(),
            source: img.source.into(),
            scene_id: img.scene_id.into(),
            frame_idx: Some(img.frame_idx),
            cameras: vec![img.camera.into()],
            camera_frame_ids: vec![img.camera_frame_id.into()],
            objects: [self.track(&r.subject), self.track(&r.object)].into_iter().flatten().collect(),
            marks: {
                let m: serde_json::Map<String, serde_json::Value> = [&r.subject, &r.object]
                    .into_iter()
                    .filter_map(|k| self.track(k).map(|t| (k.clone(), json!(t))))
                    .collect();
                serde_json::Value::Object(m).to_string()
            },
            rule: if directional {
                "sig directional sector of the grid offset".into()
            } else {
                "sig proximal bin of the grid distance".into()
            },
            params: json!({"config_hash": config_hash, "proximal_bins": cfg.relations.proximal_bins, "grid": [cfg.grid.columns, cfg.grid.rows]}).to_string(),
            evidence: json!({"subject": r.subject, "object": r.object, "dx": r.dx, "dy": r.dy, "distance": r.distance}).to_string(),
            seed,
            ..Default::default()
        }
    }
}
