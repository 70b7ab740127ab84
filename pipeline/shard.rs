//! `--shard i/N`: a deterministic 1/N of a store's scenes, so N machines (a Slurm job array,
//! a Kubernetes indexed job) can share one release. Shards are balanced by cost, not by scene
//! count: [`ShardPlan`] weighs each scene by its camera images and boxes (what the per-scene
//! stages spend their time on) and gives the costliest scene first to the shard with the
//! least work so far (longest processing time first). The plan depends only on the store, so
//! every task of an array computes the same one. A scene the store does not hold (one refused
//! at ingest, kept for its reject record) goes to shard `sha256(scene_id) mod N`.
//! Global steps (balancing, the release) read every shard's output and sort it canonically, so
//! the merged release does not depend on the plan or on N.
//!
//! `--shard auto` reads the shard from the scheduler: a Slurm array task's
//! `SLURM_ARRAY_TASK_ID` (less `SLURM_ARRAY_TASK_MIN`) of `SLURM_ARRAY_TASK_COUNT`, or a
//! Kubernetes indexed job's `JOB_COMPLETION_INDEX` of the count `--shard-count` (or
//! `DRIVEGEN_SHARD_COUNT`) gives, since a pod is not told its job's completions.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// Shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// The whole dataset.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// The shard of `count` a scene outside any plan goes to: a hash of its id, so it does
    /// not depend on which other scenes exist.
    fn by_hash(scene_id: &str, count: u32) -> u32 {
        let d = Sha256::digest(scene_id.as_bytes());
        let mut b = [0u8; 8];
        b.copy_from_slice(&d[..8]);
        // The remainder is below `count`, a u32.
        (u64::from_be_bytes(b) % u64::from(count.max(1))) as u32
    }
}

/// What a scene costs the per-scene stages: its camera images (each is drawn, corrupted,
/// encoded and asked about) and its boxes (each is projected and tested for visibility in
/// every frame it is in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SceneCost {
    pub images: u64,
    pub boxes: u64,
}

/// How many box rows cost as much as one camera image: an estimate from the demo's step
/// times, where a camera image takes tens of milliseconds across its marks, corruptions and
/// encoding, and a box row a fraction of a millisecond in visibility and the questions.
pub(crate) const BOXES_PER_IMAGE_COST: u64 = 256;

impl SceneCost {
    /// The cost in box units.
    pub fn weight(&self) -> u64 {
        self.images
            .saturating_mul(BOXES_PER_IMAGE_COST)
            .saturating_add(self.boxes)
            .max(1)
    }
}

/// Which shard each scene of a store goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardPlan {
    count: u32,
    owner: HashMap<String, u32>,
    loads: Vec<u64>,
}

impl ShardPlan {
    /// Splits `scenes` over `count` shards, longest processing time first: scenes by weight
    /// (heaviest first, ties by id), each to the shard with the least weight so far (ties to
    /// the lowest index). The slowest shard is within the heaviest scene of the mean, and
    /// never above 4/3 of the best split.
    pub fn balanced(scenes: impl IntoIterator<Item = (String, SceneCost)>, count: u32) -> Self {
        let count = count.max(1);
        let mut order: Vec<(u64, String)> =
            scenes.into_iter().map(|(id, c)| (c.weight(), id)).collect();
        order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut heap: BinaryHeap<Reverse<(u64, u32)>> =
            (0..count).map(|i| Reverse((0, i))).collect();
        let mut loads = vec![0u64; count as usize];
        let mut owner = HashMap::with_capacity(order.len());
        for (w, id) in order {
            let Some(Reverse((load, i))) = heap.pop() else {
                break;
            };
            let load = load.saturating_add(w);
            loads[i as usize] = load;
            owner.insert(id, i);
            heap.push(Reverse((load, i)));
        }
        Self {
            count,
            owner,
            loads,
        }
    }

    /// The shard a scene goes to.
    pub(crate) fn shard_of(&self, scene_id: &str) -> u32 {
        match self.owner.get(scene_id) {
            Some(&i) => i,
            None => Shard::by_hash(scene_id, self.count),
        }
    }

    /// Whether `shard` owns the scene (every scene when the build is not sharded).
    pub(crate) fn owns(&self, shard: Shard, scene_id: &str) -> bool {
        shard.count <= 1 || self.shard_of(scene_id) == shard.index
    }

    /// Each shard's summed scene weights.
    pub fn loads(&self) -> &[u64] {
        &self.loads
    }

    /// The scenes the plan places.
    pub fn scenes(&self) -> usize {
        self.owner.len()
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `i/N` with `0 ≤ i < N`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}`: expected i/N, e.g. 0/4"))?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|e| format!("`{s}`: shard index {i}: {e}"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|e| format!("`{s}`: shard count {n}: {e}"))?;
        if count == 0 || index >= count {
            return Err(format!("`{s}`: need 0 ≤ i < N"));
        }
        Ok(Shard { index, count })
    }
}

/// What `--shard` names: a fixed `i/N`, or `auto` (the scheduler's environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShardSpec {
    Fixed(Shard),
    Auto,
}

impl FromStr for ShardSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "auto" {
            return Ok(ShardSpec::Auto);
        }
        s.parse()
            .map(ShardSpec::Fixed)
            .map_err(|e| format!("{e}, or auto"))
    }
}

impl ShardSpec {
    /// The shard, reading the environment through `var` for `auto`; `count` is
    /// `--shard-count`. Also says where an `auto` shard came from.
    pub fn resolve(
        self,
        var: impl Fn(&str) -> Option<String>,
        count: Option<u32>,
    ) -> Result<(Shard, String), String> {
        match self {
            ShardSpec::Fixed(s) => match count {
                Some(n) if n != s.count => Err(format!(
                    "--shard {s} and --shard-count {n} disagree on the number of shards"
                )),
                _ => Ok((s, format!("--shard {s}"))),
            },
            ShardSpec::Auto => from_env(&var, count),
        }
    }
}

/// The names `--shard auto` reads.
const SLURM_ID: &str = "SLURM_ARRAY_TASK_ID";
const SLURM_MIN: &str = "SLURM_ARRAY_TASK_MIN";
const SLURM_MAX: &str = "SLURM_ARRAY_TASK_MAX";
const SLURM_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";
const COUNT_VAR: &str = "DRIVEGEN_SHARD_COUNT";

fn number(var: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Option<u32>, String> {
    match var(name) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{name}={v:?} is not a whole number ≥ 0")),
    }
}

fn from_env(
    var: &impl Fn(&str) -> Option<String>,
    flag: Option<u32>,
) -> Result<(Shard, String), String> {
    let env_count = number(var, COUNT_VAR)?;
    let count = match (flag, env_count) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "--shard-count {a} and {COUNT_VAR}={b} disagree on the number of shards"
            ))
        }
        (a, b) => a.or(b),
    };
    let slurm = slurm_shard(var)?;
    let k8s = match number(var, K8S_INDEX)? {
        None => None,
        Some(i) => {
            let n = count.or(slurm.map(|s| s.count)).ok_or_else(|| {
                format!(
                    "{K8S_INDEX}={i} is set but not the number of shards: pass --shard-count \
                     (the indexed job's completions) or set {COUNT_VAR}"
                )
            })?;
            Some(Shard { index: i, count: n })
        }
    };
    let (shard, from) = match (slurm, k8s) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "the Slurm array says shard {a} and {K8S_INDEX} says {b}; unset one"
            ))
        }
        (Some(a), _) => (a, format!("{SLURM_ID} of the Slurm array")),
        (None, Some(b)) => (b, format!("{K8S_INDEX} of the indexed job")),
        (None, None) => {
            return Err(format!(
                "--shard auto needs a scheduler's task index: {SLURM_ID} (a Slurm job array) \
                 or {K8S_INDEX} (a Kubernetes indexed job); neither is set. Outside a \
                 scheduler, give --shard i/N"
            ))
        }
    };
    if let Some(n) = count {
        if n != shard.count {
            return Err(format!(
                "the {from} has {} shards, but the shard count given is {n}",
                shard.count
            ));
        }
    }
    if shard.count == 0 || shard.index >= shard.count {
        return Err(format!(
            "the {from} gives shard {} of {}: need 0 ≤ index < count",
            shard.index, shard.count
        ));
    }
    Ok((shard, format!("shard {shard} from the {from}")))
}

/// The Slurm array task's shard, if this is one: ids must run from MIN to MAX without gaps
/// (an array such as `--array=0-7`, not `0-7:2` or `1,4`), so that COUNT shards cover them.
fn slurm_shard(var: &impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, String> {
    let Some(id) = number(var, SLURM_ID)? else {
        return Ok(None);
    };
    let min = number(var, SLURM_MIN)?.unwrap_or(0);
    let count = number(var, SLURM_COUNT)?
        .ok_or_else(|| format!("{SLURM_ID}={id} is set but {SLURM_COUNT} is not"))?;
    let max = number(var, SLURM_MAX)?.unwrap_or(min + count.saturating_sub(1));
    if max < min || max - min + 1 != count || id < min || id > max {
        return Err(format!(
            "the Slurm array's task ids ({SLURM_MIN}={min}, {SLURM_MAX}={max}, \
             {SLURM_COUNT}={count}, {SLURM_ID}={id}) are not one contiguous range: submit \
             the array as --array=0-{}",
            count.saturating_sub(1)
        ));
    }
    Ok(Some(Shard {
        index: id - min,
        count,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    fn auto(pairs: &[(&str, &str)], count: Option<u32>) -> Result<Shard, String> {
        ShardSpec::Auto.resolve(env(pairs), count).map(|(s, _)| s)
    }

    #[test]
    fn auto_reads_slurm_arrays_and_indexed_jobs() {
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "6"),
            ("SLURM_ARRAY_TASK_MIN", "4"),
            ("SLURM_ARRAY_TASK_MAX", "7"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(auto(&slurm, None), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(auto(&slurm, Some(4)), Ok(Shard { index: 2, count: 4 }));
        let k8s = [("JOB_COMPLETION_INDEX", "3")];
        assert_eq!(auto(&k8s, Some(5)), Ok(Shard { index: 3, count: 5 }));
        let with_env = [("JOB_COMPLETION_INDEX", "0"), ("DRIVEGEN_SHARD_COUNT", "2")];
        assert_eq!(auto(&with_env, None), Ok(Shard { index: 0, count: 2 }));
        let fixed = ShardSpec::Fixed(Shard { index: 1, count: 3 });
        assert_eq!(
            fixed.resolve(env(&slurm), None).map(|r| r.0),
            Ok(Shard { index: 1, count: 3 })
        );
    }

    #[test]
    fn auto_refuses_missing_contradictory_and_gapped_environments() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<u32>, &'a str);
        let cases: [Case; 8] = [
            (&[], None, "neither is set"),
            (&[("JOB_COMPLETION_INDEX", "1")], None, "--shard-count"),
            (
                &[("JOB_COMPLETION_INDEX", "4")],
                Some(4),
                "0 ≤ index < count",
            ),
            (
                &[("JOB_COMPLETION_INDEX", "x")],
                Some(4),
                "not a whole number",
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "2"),
                    ("SLURM_ARRAY_TASK_COUNT", "4"),
                ],
                Some(3),
                "shard count given is 3",
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "2"),
                    ("SLURM_ARRAY_TASK_MIN", "0"),
                    ("SLURM_ARRAY_TASK_MAX", "6"),
                    ("SLURM_ARRAY_TASK_COUNT", "4"),
                ],
                None,
                "contiguous",
            ),
            (
                &[("SLURM_ARRAY_TASK_ID", "2")],
                None,
                "SLURM_ARRAY_TASK_COUNT",
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "1"),
                    ("SLURM_ARRAY_TASK_COUNT", "4"),
                    ("JOB_COMPLETION_INDEX", "2"),
                ],
                None,
                "unset one",
            ),
        ];
        for (pairs, count, want) in cases {
            let err = auto(pairs, count).unwrap_err();
            assert!(err.contains(want), "{pairs:?}: {err}");
        }
        let fixed = ShardSpec::Fixed(Shard { index: 1, count: 3 });
        assert!(fixed.resolve(env(&[]), Some(4)).is_err());
        assert_eq!("auto".parse::<ShardSpec>(), Ok(ShardSpec::Auto));
        assert!("car".parse::<ShardSpec>().unwrap_err().contains("or auto"));
    }

    /// A corpus like a mixed release: nuScenes-like scenes (20 s, 6 cameras, 40 frames) beside
    /// Waymo-like ones (longer, 5 cameras, 200 frames) and short CARLA routes, with box counts
    /// that vary by an order of magnitude.
    fn mixed_corpus(n: usize, seed: u64) -> Vec<(String, SceneCost)> {
        let mut rng = crate::qa::record::SplitMix64::new(seed);
        (0..n)
            .map(|k| {
                let r = rng.next_u64();
                let (frames, cams) = match r % 3 {
                    0 => (40, 6),
                    1 => (200, 5),
                    _ => (10 + (r >> 8) % 90, 6),
                };
                let per_frame = 5 + (r >> 20) % 120;
                let c = SceneCost {
                    images: frames * cams,
                    boxes: frames * per_frame,
                };
                (format!("scene-{k:04}"), c)
            })
            .collect()
    }

    #[test]
    fn every_scene_has_exactly_one_shard_and_the_slowest_is_near_the_mean() {
        for (scenes, n) in [
            (850usize, 8u32),
            (850, 64),
            (40, 4),
            (120, 7),
            (5, 8),
            (1, 3),
        ] {
            let corpus = mixed_corpus(scenes, u64::from(n) * 1000 + scenes as u64);
            let plan = ShardPlan::balanced(corpus.clone(), n);
            let mut loads = vec![0u64; n as usize];
            for (id, c) in &corpus {
                let owners: Vec<u32> = (0..n)
                    .filter(|&i| plan.owns(Shard { index: i, count: n }, id))
                    .collect();
                assert_eq!(owners.len(), 1, "{id} in {owners:?} of {n}");
                loads[owners[0] as usize] += c.weight();
            }
            assert_eq!(loads, plan.loads(), "{scenes} scenes in {n}");
            let total: u64 = loads.iter().sum();
            let mean = total as f64 / f64::from(n);
            let heaviest = corpus.iter().map(|c| c.1.weight()).max().unwrap_or(0);
            let slowest = *loads.iter().max().unwrap_or(&0);
            // LPT's bound: no shard exceeds the mean by more than one scene.
            assert!(slowest as f64 <= mean + heaviest as f64, "{loads:?}");
            if scenes >= 20 * n as usize {
                assert!(slowest as f64 <= 1.15 * mean, "{scenes} in {n}: {loads:?}");
            }
        }
    }

    #[test]
    fn the_plan_does_not_depend_on_the_scene_order() {
        let corpus = mixed_corpus(300, 9);
        let mut reversed = corpus.clone();
        reversed.reverse();
        assert_eq!(
            ShardPlan::balanced(corpus.clone(), 6),
            ShardPlan::balanced(reversed, 6)
        );
        // Equal scenes split evenly, which hashing ids does not do.
        let equal: Vec<(String, SceneCost)> = (0..12)
            .map(|k| {
                (
                    format!("s{k}"),
                    SceneCost {
                        images: 6,
                        boxes: 40,
                    },
                )
            })
            .collect();
        assert_eq!(
            ShardPlan::balanced(equal, 4).loads(),
            &[3 * (6 * 256 + 40); 4]
        );
        // A scene the plan does not hold still has exactly one shard.
        let plan = ShardPlan::balanced(corpus, 6);
        let n = (0..6)
            .filter(|&i| plan.owns(Shard { index: i, count: 6 }, "rejected-at-ingest"))
            .count();
        assert_eq!(n, 1);
    }

    #[test]
    fn parsing() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "3", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard { index: 1, count: 3 }.to_string(), "1/3");
    }
}
