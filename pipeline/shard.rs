//! `--shard i/N`: a deterministic 1/N of a store's scenes, so N machines (a Slurm job array,
//! a Kubernetes indexed job) can share one release. A scene belongs to shard
//! `sha256(scene_id) mod N`, which does not depend on the store's scene order or on which
//! other scenes exist, so re-ingesting a source with a scene added moves no other scene.
//! Global steps (balancing, the release) read every shard's output and sort it canonically.
//!
//! `--shard auto` reads the shard from the scheduler: a Slurm array task's
//! `SLURM_ARRAY_TASK_ID` (less `SLURM_ARRAY_TASK_MIN`) of `SLURM_ARRAY_TASK_COUNT`, or a
//! Kubernetes indexed job's `JOB_COMPLETION_INDEX` of the count `--shard-count` (or
//! `DRIVEGEN_SHARD_COUNT`) gives, since a pod is not told its job's completions.

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

    /// Whether this shard owns the scene.
    pub fn owns(&self, scene_id: &str) -> bool {
        if self.count <= 1 {
            return true;
        }
        let d = Sha256::digest(scene_id.as_bytes());
        let mut b = [0u8; 8];
        b.copy_from_slice(&d[..8]);
        u64::from_be_bytes(b) % u64::from(self.count) == u64::from(self.index)
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
pub enum ShardSpec {
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

    #[test]
    fn every_scene_has_exactly_one_shard_and_shards_are_balanced() {
        for n in 1..=7u32 {
            let shards: Vec<Shard> = (0..n).map(|i| Shard { index: i, count: n }).collect();
            let mut sizes = vec![0usize; n as usize];
            for k in 0..2000 {
                let id = format!("scene-{k:04}");
                let owners: Vec<usize> = (0..n as usize).filter(|&i| shards[i].owns(&id)).collect();
                assert_eq!(owners.len(), 1, "{id} in {n} shards");
                sizes[owners[0]] += 1;
            }
            let expect = 2000 / n as usize;
            assert!(
                sizes.iter().all(|&s| s.abs_diff(expect) < expect / 4 + 20),
                "{sizes:?}"
            );
        }
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
