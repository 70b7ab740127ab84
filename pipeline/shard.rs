//! `--shard i/N`: a deterministic 1/N of a store's scenes, so N machines (a Slurm job array,
//! a Kubernetes indexed job) can share one release. A scene belongs to shard
//! `sha256(scene_id) mod N`, which does not depend on the store's scene order or on which
//! other scenes exist, so re-ingesting a source with a scene added moves no other scene.
//! Global steps (balancing, the release) read every shard's output and sort it canonically.

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

#[cfg(test)]
mod tests {
    use super::*;

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
