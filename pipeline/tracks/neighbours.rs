//! Which pairs of tracks ever come within a radius of each other, with a k-d tree (kiddo) per
//! keyframe, so the cost grows with the number of close pairs, not with the square of the
//! number of tracks.

use std::collections::{BTreeMap, BTreeSet};

use kiddo::{KdTree, SquaredEuclidean};

use super::Track;

/// Unordered pairs `(i, j)`, `i < j`, of indices into `tracks` that are within `radius_m` of
/// each other on at least one keyframe both are annotated on, in ascending order.
pub fn candidate_pairs(tracks: &[Track], radius_m: f64) -> Vec<(usize, usize)> {
    let mut by_frame: BTreeMap<u32, Vec<(usize, [f64; 2])>> = BTreeMap::new();
    for (ti, tr) in tracks.iter().enumerate() {
        for (k, &f) in tr.frames.iter().enumerate() {
            let p = tr.xy[k];
            if p[0].is_finite() && p[1].is_finite() {
                by_frame.entry(f).or_default().push((ti, p));
            }
        }
    }
    let r2 = radius_m * radius_m;
    let mut pairs = BTreeSet::new();
    for members in by_frame.values() {
        // kiddo's buckets cannot hold many identical points, so the tree holds each distinct
        // position once and a position's tracks are looked up in `groups`.
        let mut groups: BTreeMap<[u64; 2], Vec<usize>> = BTreeMap::new();
        for &(ti, p) in members {
            groups
                .entry([p[0].to_bits(), p[1].to_bits()])
                .or_default()
                .push(ti);
        }
        let keys: Vec<[u64; 2]> = groups.keys().copied().collect();
        let mut tree: KdTree<f64, 2> = KdTree::with_capacity(keys.len().max(1));
        for (gi, k) in keys.iter().enumerate() {
            tree.add(&[f64::from_bits(k[0]), f64::from_bits(k[1])], gi as u64);
        }
        for (gi, k) in keys.iter().enumerate() {
            let here = &groups[k];
            for a in 0..here.len() {
                for b in a + 1..here.len() {
                    pairs.insert((here[a].min(here[b]), here[a].max(here[b])));
                }
            }
            let q = [f64::from_bits(k[0]), f64::from_bits(k[1])];
            for nb in tree.within_unsorted::<SquaredEuclidean>(&q, r2) {
                let gj = nb.item as usize;
                if gj <= gi {
                    continue;
                }
                for &x in here {
                    for &y in &groups[&keys[gj]] {
                        pairs.insert((x.min(y), x.max(y)));
                    }
                }
            }
        }
    }
    pairs.into_iter().collect()
}
