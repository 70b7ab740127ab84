//! Which clean rows a robustness split re-asks: per family, a seeded draw of at most `rows`
//! rows, stratified over question type and answer. The budget is spread evenly over the
//! family's types, then over each type's answers (a stratum smaller than its share gives the
//! rest to the others), and each stratum takes its rows in the order of a seeded hash of their
//! ids. The draw depends on the rows' ids, types and answers and the seed alone, so a sharded
//! build and an unsharded one re-ask the same rows, and every setting re-asks the same rows.

use std::collections::{BTreeMap, HashSet};

use sha2::{Digest, Sha256};

/// The kept rows of the re-asked families, in compact form: per family, per (type, answer),
/// the rows' id keys ([`crate::release::screen::id_key`]).
#[derive(Debug, Default)]
pub(crate) struct Pool {
    families: BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<u128>>>>,
}

impl Pool {
    pub fn add(&mut self, family: &str, question_type: &str, answer: &str, key: u128) {
        self.families
            .entry(family.to_string())
            .or_default()
            .entry(question_type.to_string())
            .or_default()
            .entry(answer.to_string())
            .or_default()
            .push(key);
    }

    /// The rows drawn per family (families without rows are absent).
    pub fn draw(&self, rows: usize, seed: u64) -> BTreeMap<String, HashSet<u128>> {
        self.families
            .iter()
            .map(|(family, types)| {
                let mut chosen = HashSet::new();
                let sizes: Vec<usize> = types
                    .values()
                    .map(|a| a.values().map(Vec::len).sum())
                    .collect();
                let names: Vec<&str> = types.keys().map(String::as_str).collect();
                let quotas = allocate(&sizes, rows, &names, seed);
                for ((t, answers), quota) in types.iter().zip(quotas) {
                    let sizes: Vec<usize> = answers.values().map(Vec::len).collect();
                    let names: Vec<String> = answers.keys().map(|a| format!("{t}\0{a}")).collect();
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    for (keys, k) in answers.values().zip(allocate(&sizes, quota, &names, seed)) {
                        let mut ranked: Vec<(u64, u128)> =
                            keys.iter().map(|&key| (rank(seed, key), key)).collect();
                        ranked.sort_unstable();
                        chosen.extend(ranked.into_iter().take(k).map(|(_, key)| key));
                    }
                }
                (family.clone(), chosen)
            })
            .collect()
    }
}

/// A row's place in its stratum's draw.
fn rank(seed: u64, key: u128) -> u64 {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(key.to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// Splits `budget` over strata of `sizes` as evenly as they allow (water-filling): no stratum
/// gets more than it has, the rest goes to the others, and the last units (when the budget does
/// not divide) go to the strata first in a seeded order of their `names`.
pub(crate) fn allocate(sizes: &[usize], budget: usize, names: &[&str], seed: u64) -> Vec<usize> {
    let mut got = vec![0usize; sizes.len()];
    let mut left = budget.min(sizes.iter().sum());
    let mut open: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] > 0).collect();
    while left > 0 && !open.is_empty() {
        let share = left / open.len();
        if share == 0 {
            // Fewer units than open strata: one each, in a seeded order.
            open.sort_by_key(|&i| (rank(seed, u128::from(name_key(names.get(i).copied()))), i));
            for &i in open.iter().take(left) {
                got[i] += 1;
            }
            break;
        }
        for &i in &open {
            let add = share.min(sizes[i] - got[i]);
            got[i] += add;
            left -= add;
        }
        open.retain(|&i| got[i] < sizes[i]);
    }
    got
}

fn name_key(name: Option<&str>) -> u64 {
    let d = Sha256::digest(name.unwrap_or("").as_bytes());
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_is_even_capped_and_exact() {
        let names = ["a", "b", "c"];
        assert_eq!(allocate(&[10, 10, 10], 9, &names, 0), vec![3, 3, 3]);
        assert_eq!(allocate(&[1, 10, 10], 9, &names, 0), vec![1, 4, 4]);
        assert_eq!(allocate(&[1, 2, 3], 100, &names, 0), vec![1, 2, 3]);
        assert_eq!(allocate(&[0, 5, 5], 4, &names, 0), vec![0, 2, 2]);
        let odd = allocate(&[5, 5, 5], 4, &names, 0);
        assert_eq!(odd.iter().sum::<usize>(), 4);
        assert!(odd.iter().all(|&k| (1..=2).contains(&k)), "{odd:?}");
        assert_eq!(allocate(&[], 4, &[], 0), Vec::<usize>::new());
    }

    #[test]
    fn the_draw_is_stratified_seeded_and_independent_of_insertion_order() {
        let mut rows = Vec::new();
        for t in ["near", "far"] {
            for (a, n) in [("yes", 30u128), ("no", 6)] {
                for k in 0..n {
                    rows.push((
                        t,
                        a,
                        (k << 8) | u128::from(t.len() as u8) << 4 | a.len() as u128,
                    ));
                }
            }
        }
        let mut forward = Pool::default();
        let mut backward = Pool::default();
        for (t, a, k) in &rows {
            forward.add("sig", t, a, *k);
        }
        for (t, a, k) in rows.iter().rev() {
            backward.add("sig", t, a, *k);
        }
        let d = forward.draw(20, 7);
        assert_eq!(d, backward.draw(20, 7));
        let chosen = &d["sig"];
        assert_eq!(chosen.len(), 20);
        // Each type gets 10: 5 "yes" and 5 "no" (the "no" strata have 6 rows each).
        for (t, a) in [
            ("near", "yes"),
            ("near", "no"),
            ("far", "yes"),
            ("far", "no"),
        ] {
            let n = rows
                .iter()
                .filter(|(rt, ra, k)| *rt == t && *ra == a && chosen.contains(k))
                .count();
            assert_eq!(n, 5, "{t}/{a}");
        }
        assert_ne!(forward.draw(20, 8), d, "another seed draws other rows");
        assert_eq!(forward.draw(1000, 7)["sig"].len(), rows.len());
    }
}
