//! Where each row's correct option goes so that answer letters are uniform: the rule, once,
//! and the compact form of it the release keeps for every row it reads.
//!
//! The rule: within every (family, number of options, type), the k-th row by `qa_id` gets its
//! correct option at position `(start + k) mod n`. A group's start carries on from the
//! previous type of the same family and option count (types in name order), so the
//! remainders of successive types fall on successive letters instead of all on "A" and "B".
//! Types whose options have an order of their own (an arc, a line) keep their positions.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::qa::compact::{Column, Names};
use crate::qa::{self, QaRecord};

/// (family, number of options, type): the rows whose letters are spread together.
pub(crate) type Group<'a> = (&'a str, u8, &'a str);

/// The position of each group's first row, from the groups' sizes; None where rows stay.
fn starts<'a>(sizes: &BTreeMap<Group<'a>, usize>) -> BTreeMap<Group<'a>, Option<usize>> {
    let mut offset: BTreeMap<(&str, u8), usize> = BTreeMap::new();
    sizes
        .iter()
        .map(|(&group, &size)| {
            let (family, n_choices, qtype) = group;
            let n = usize::from(n_choices);
            if n < 2 || !qa::option_order(family, qtype).movable() {
                return (group, None);
            }
            let off = offset.entry((family, n_choices)).or_default();
            let start = *off;
            *off = (*off + size) % n;
            (group, Some(start))
        })
        .collect()
}

/// The rule over rows known by their group and `qa_id`, aligned with `order`.
pub(crate) fn place<'a>(
    order: &[usize],
    group: impl Fn(usize) -> Group<'a>,
    qa_id: impl Fn(usize) -> &'a str,
) -> Vec<Option<u8>> {
    let mut groups: BTreeMap<Group<'a>, Vec<usize>> = BTreeMap::new();
    for (pos, &k) in order.iter().enumerate() {
        groups.entry(group(k)).or_default().push(pos);
    }
    let sizes = groups.iter().map(|(g, p)| (*g, p.len())).collect();
    let starts = starts(&sizes);
    let mut out = vec![None; order.len()];
    for (g, mut positions) in groups {
        let Some(start) = starts[&g] else { continue };
        let n = usize::from(g.1);
        positions.sort_by(|&a, &b| qa_id(order[a]).cmp(qa_id(order[b])));
        for (rank, &pos) in positions.iter().enumerate() {
            out[pos] = Some(((start + rank) % n) as u8);
        }
    }
    out
}

/// A row read but not published: its `qa_id` still counts against repeats.
const LEFT_OUT: u32 = u32::MAX;
/// A row whose correct option stays where it is.
const STAY: u8 = u8::MAX;

/// What placing the letters needs of every row the release reads, about 12 bytes a row: the
/// ids of the form drivegen writes (`{family}-{16 hex digits}`) as the number they spell,
/// which orders them as their text does.
#[derive(Debug, Default)]
pub(crate) struct Letters {
    names: Names,
    /// By family name, in name order.
    families: Vec<(String, FamilyRows)>,
}

#[derive(Debug, Default)]
struct FamilyRows {
    keys: Keys,
    /// Per row, in read order: an index into `groups`, or [`LEFT_OUT`].
    rows: Vec<u32>,
    /// (type id, number of options) of each group, and back.
    groups: Vec<(u32, u8)>,
    group_ids: HashMap<(u32, u8), u32>,
}

#[derive(Debug)]
enum Keys {
    Hex(Vec<u64>),
    /// Once one id of the family is of another form, all of its ids as text.
    Text(Column),
}

impl Default for Keys {
    fn default() -> Self {
        Keys::Hex(Vec::new())
    }
}

/// The number a `qa_id` of drivegen's form spells, for its family.
fn hex_key(family: &str, qa_id: &str) -> Option<u64> {
    let digits = qa_id.strip_prefix(family)?.strip_prefix('-')?;
    let lower = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
    (digits.len() == 16 && digits.bytes().all(|b| lower(&b)))
        .then(|| u64::from_str_radix(digits, 16).ok())
        .flatten()
}

impl FamilyRows {
    fn push_key(&mut self, family: &str, qa_id: &str) {
        if let Keys::Hex(keys) = &mut self.keys {
            if let Some(k) = hex_key(family, qa_id) {
                keys.push(k);
                return;
            }
            let mut text = Column::default();
            for k in keys.iter() {
                text.push(&format!("{family}-{k:016x}"));
            }
            self.keys = Keys::Text(text);
        }
        if let Keys::Text(text) = &mut self.keys {
            text.push(qa_id);
        }
    }

    fn id(&self, family: &str, row: usize) -> String {
        match &self.keys {
            Keys::Hex(k) => format!("{family}-{:016x}", k[row]),
            Keys::Text(t) => t.get(row).to_string(),
        }
    }

    /// Row indices in `qa_id` order, or the first id that appears twice.
    fn sorted(&self, family: &str) -> Result<Vec<u32>, String> {
        let mut perm: Vec<u32> = (0..self.rows.len() as u32).collect();
        let twice = match &self.keys {
            Keys::Hex(k) => {
                perm.sort_unstable_by_key(|&i| k[i as usize]);
                perm.windows(2)
                    .find(|w| k[w[0] as usize] == k[w[1] as usize])
            }
            Keys::Text(t) => {
                perm.sort_unstable_by(|&a, &b| t.get(a as usize).cmp(t.get(b as usize)));
                perm.windows(2)
                    .find(|w| t.get(w[0] as usize) == t.get(w[1] as usize))
            }
        };
        match twice {
            Some(w) => Err(self.id(family, w[0] as usize)),
            None => Ok(perm),
        }
    }
}

/// Where the correct option of each row goes, per family in the order its rows were read.
#[derive(Debug, Default)]
pub(crate) struct Moves {
    families: BTreeMap<String, Vec<u8>>,
}

impl Moves {
    /// Where the correct option of the `k`-th row of `family` (in read order, published or
    /// not) goes; None where it stays.
    pub fn get(&self, family: &str, k: usize) -> Option<u8> {
        let to = *self.families.get(family)?.get(k)?;
        (to != STAY).then_some(to)
    }

    /// How many rows get a position.
    pub fn placed(&self) -> usize {
        self.families
            .values()
            .map(|m| m.iter().filter(|&&to| to != STAY).count())
            .sum()
    }
}

impl Letters {
    /// A row to publish.
    pub fn push(&mut self, r: &QaRecord) {
        let qtype = self.names.id(&r.question_type);
        let n = r.choices.len().min(usize::from(u8::MAX)) as u8;
        let rows = self.family(r);
        let next = rows.groups.len() as u32;
        let g = *rows.group_ids.entry((qtype, n)).or_insert(next);
        if g == next {
            rows.groups.push((qtype, n));
        }
        rows.rows.push(g);
    }

    /// A row read but left out: no letter, but its id may not come again.
    pub fn push_left_out(&mut self, r: &QaRecord) {
        self.family(r).rows.push(LEFT_OUT);
    }

    fn family(&mut self, r: &QaRecord) -> &mut FamilyRows {
        // Kept in name order, so a family's name is copied once, not per row.
        let i = match self.families.binary_search_by(|(f, _)| f.cmp(&r.family)) {
            Ok(i) => i,
            Err(i) => {
                self.families
                    .insert(i, (r.family.clone(), FamilyRows::default()));
                i
            }
        };
        let rows = &mut self.families[i].1;
        rows.push_key(&r.family, &r.qa_id);
        rows
    }

    /// Places every published row's letter, or names a `qa_id` read twice.
    pub fn finish(self) -> Result<Moves, String> {
        let mut moves = Moves::default();
        for (family, rows) in &self.families {
            let perm = rows.sorted(family)?;
            let group = |g: u32| {
                let (t, n) = rows.groups[g as usize];
                (family.as_str(), n, self.names.name(t))
            };
            let mut sizes: BTreeMap<Group<'_>, usize> = BTreeMap::new();
            for &g in rows.rows.iter().filter(|&&g| g != LEFT_OUT) {
                *sizes.entry(group(g)).or_default() += 1;
            }
            let starts = starts(&sizes);
            let mut rank = vec![0usize; rows.groups.len()];
            let mut out = vec![STAY; rows.rows.len()];
            for &i in &perm {
                let g = rows.rows[i as usize];
                if g == LEFT_OUT {
                    continue;
                }
                let (family, n, qtype) = group(g);
                if let Some(start) = starts[&(family, n, qtype)] {
                    out[i as usize] = ((start + rank[g as usize]) % usize::from(n)) as u8;
                }
                rank[g as usize] += 1;
            }
            moves.families.insert(family.clone(), out);
        }
        self.across_families()?;
        Ok(moves)
    }

    /// Ids of drivegen's form carry their family, so only ids of another form can repeat
    /// across families.
    fn across_families(&self) -> Result<(), String> {
        let mut text: Vec<&str> = Vec::new();
        for (_, rows) in &self.families {
            if let Keys::Text(t) = &rows.keys {
                text.extend((0..t.len()).map(|i| t.get(i)));
            }
        }
        if text.is_empty() {
            return Ok(());
        }
        text.sort_unstable();
        if let Some(w) = text.windows(2).find(|w| w[0] == w[1]) {
            return Err(w[0].to_string());
        }
        for (family, rows) in &self.families {
            let Keys::Hex(keys) = &rows.keys else {
                continue;
            };
            let keys: HashSet<u64> = keys.iter().copied().collect();
            if let Some(id) = text
                .iter()
                .find(|id| hex_key(family, id).is_some_and(|k| keys.contains(&k)))
            {
                return Err(id.to_string());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(family: &str, qa_id: &str, qtype: &str, n: usize) -> QaRecord {
        QaRecord {
            qa_id: qa_id.into(),
            family: family.into(),
            question_type: qtype.into(),
            choices: (0..n).map(|c| format!("option {c}")).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn hex_ids_order_as_their_text() {
        let mut rng = crate::synth::tokens::Rng::new(3, "hex ids");
        let mut ids: Vec<String> = (0..500)
            .map(|_| format!("sig-{:016x}", rng.next_u64() >> rng.below(64)))
            .collect();
        let mut by_key = ids.clone();
        by_key.sort_by_key(|id| hex_key("sig", id).expect("drivegen's form"));
        ids.sort();
        assert_eq!(by_key, ids);
        assert_eq!(hex_key("sig", "sig-00000000000000AB"), None);
        assert_eq!(hex_key("sig", "sig-0000000000000ab"), None);
        assert_eq!(hex_key("sig", "egodyn-00000000000000ab"), None);
    }

    #[test]
    fn an_id_read_twice_is_named_in_either_form() {
        for (a, b) in [
            ("sig-00000000000000ab", "sig-00000000000000ab"),
            ("custom 7", "custom 7"),
        ] {
            let mut l = Letters::default();
            l.push(&row("sig", "sig-0000000000000001", "t", 3));
            l.push(&row("sig", a, "t", 3));
            l.push_left_out(&row("sig", b, "t", 3));
            assert_eq!(l.finish().unwrap_err(), a);
        }
        // Across families only an id of another form can repeat.
        let mut l = Letters::default();
        l.push(&row("sig", "sig-00000000000000ab", "t", 3));
        l.push(&row("egodyn", "sig-00000000000000ab", "t", 3));
        assert_eq!(l.finish().unwrap_err(), "sig-00000000000000ab");
    }

    #[test]
    fn ids_of_another_form_place_as_drivegen_ids_would() {
        let mut rng = crate::synth::tokens::Rng::new(11, "mixed ids");
        let rows: Vec<QaRecord> = (0..300)
            .map(|i| {
                let id = if i == 150 {
                    "metavqa-custom".to_string()
                } else {
                    format!("metavqa-{:016x}", rng.next_u64())
                };
                row(
                    "metavqa",
                    &id,
                    &format!("t{}", rng.below(3)),
                    2 + rng.below(3),
                )
            })
            .collect();
        let mut l = Letters::default();
        rows.iter().for_each(|r| l.push(r));
        let moves = l.finish().unwrap();
        let order: Vec<usize> = (0..rows.len()).collect();
        let want = place(
            &order,
            |k| {
                let r = &rows[k];
                (
                    r.family.as_str(),
                    r.choices.len() as u8,
                    r.question_type.as_str(),
                )
            },
            |k| rows[k].qa_id.as_str(),
        );
        let got: Vec<Option<u8>> = (0..rows.len()).map(|k| moves.get("metavqa", k)).collect();
        assert_eq!(got, want);
    }
}
