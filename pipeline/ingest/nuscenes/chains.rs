//! Referential integrity of a scene's linked records: the sample chain, the sample_data chains
//! and the annotation chains of its instances.
//!
//! The devkit walks these lists with `next`/`prev` and trusts the counts beside them. A list
//! that loops would walk forever, one that runs past its end or into another scene would mix
//! scenes, and a count that disagrees with its list says the export is broken. Each problem
//! rejects the scene, naming the table and the record where the list goes wrong; a scene whose
//! own rows are sound is kept even when a neighbour's records are not.

use std::collections::{HashMap, HashSet};

use super::load::Tables;
use crate::formats::nuscenes::*;
use crate::{Error, Result};

/// Keyframes: the sample chain from the scene's first sample, which must stay in the scene,
/// link back with `prev`, move forward in time, not loop, end at its `last_sample_token` and
/// hold `nbr_samples` samples.
pub(crate) fn sample_chain<'t>(t: &'t Tables, scene: &Scene) -> Result<Vec<&'t Sample>> {
    let mut samples: Vec<&Sample> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut next = link(&scene.first_sample_token);
    while let Some(tok) = next {
        let referrer = match samples.last() {
            Some(s) => format!("sample {}.next", s.token),
            None => format!("scene {}.first_sample_token", scene.token),
        };
        let s = t.sample.get(tok, &referrer)?;
        if !seen.insert(&s.token) {
            return Err(Error::input(
                &t.sample.file,
                &s.token,
                format!(
                    "the sample chain of scene {} loops: {referrer} leads back to this sample \
                     (a cycle)",
                    scene.token
                ),
            ));
        }
        if s.scene_token != scene.token {
            return Err(Error::input(
                &t.sample.file,
                &s.token,
                format!(
                    "belongs to scene {} but is chained from scene {}",
                    s.scene_token, scene.token
                ),
            ));
        }
        let before = samples.last().map_or("", |p| p.token.as_str());
        if s.prev != before {
            return Err(Error::input(
                &t.sample.file,
                &s.token,
                format!(
                    "prev is {:?} but the sample chain of scene {} reaches it from {before:?}",
                    s.prev, scene.token
                ),
            ));
        }
        if let Some(prev) = samples.last() {
            if s.timestamp <= prev.timestamp {
                return Err(Error::input(
                    &t.sample.file,
                    &s.token,
                    format!(
                        "non-monotonic timestamps: {} follows sample {} at {}",
                        s.timestamp, prev.token, prev.timestamp
                    ),
                ));
            }
        }
        samples.push(s);
        next = link(&s.next);
    }
    let Some(last) = samples.last() else {
        return Err(Error::input(
            &t.scene.file,
            &scene.token,
            "scene has no samples",
        ));
    };
    if last.token != scene.last_sample_token {
        let why = if seen.contains(scene.last_sample_token.as_str()) {
            format!(
                "the sample chain does not end at last_sample_token {}: it runs on to {}",
                scene.last_sample_token, last.token
            )
        } else {
            format!(
                "the sample chain ends at {} and never reaches last_sample_token {}",
                last.token, scene.last_sample_token
            )
        };
        return Err(Error::input(&t.scene.file, &scene.token, why));
    }
    if samples.len() != scene.nbr_samples as usize {
        return Err(Error::input(
            &t.scene.file,
            &scene.token,
            format!(
                "nbr_samples is {} but the sample chain holds {} samples",
                scene.nbr_samples,
                samples.len()
            ),
        ));
    }
    Ok(samples)
}

/// The sample_data listed under the scene's samples: their `next` and `prev` chains do not
/// loop, agree with each other, and a keyframe's neighbours on its sensor's chain belong to the
/// scene its `sample_token` names (a keyframe filed under a sample of another scene would put
/// that scene's image and pose into this one).
pub(crate) fn data_chains(t: &Tables, scene: &Scene, samples: &[&Sample]) -> Result<()> {
    let file = &t.sample_data.file;
    let rows: Vec<&SampleData> = samples
        .iter()
        .flat_map(|s| {
            t.data_by_sample
                .get(s.token.as_str())
                .map_or(&[][..], Vec::as_slice)
        })
        .map(|&i| &t.sample_data.rows[i])
        .collect();
    let mine: HashSet<&str> = rows.iter().map(|sd| sd.token.as_str()).collect();
    for (dir, step) in [("next", next_of as Step), ("prev", prev_of)] {
        if let Some(tok) = cycle(t, &rows, &mine, step) {
            return Err(Error::input(
                file,
                tok,
                format!(
                    "the sample_data {dir} chain through this record loops back to it (a \
                     cycle) in scene {}",
                    scene.token
                ),
            ));
        }
    }
    for sd in &rows {
        let referrer = format!("sample_data {}", sd.token);
        if let Some(n) = link(&sd.next) {
            let n = t.sample_data.get(n, &format!("{referrer}.next"))?;
            if n.prev != sd.token {
                return Err(Error::input(
                    file,
                    &sd.token,
                    format!(
                        "next is {} but its prev is {:?}: the chain's links disagree",
                        n.token, n.prev
                    ),
                ));
            }
        }
        if let Some(p) = link(&sd.prev) {
            let p = t.sample_data.get(p, &format!("{referrer}.prev"))?;
            if p.next != sd.token {
                return Err(Error::input(
                    file,
                    &sd.token,
                    format!(
                        "prev is {} but its next is {:?}: the chain's links disagree",
                        p.token, p.next
                    ),
                ));
            }
        }
        if sd.is_key_frame {
            keyframe_in_scene(t, scene, sd)?;
        }
    }
    Ok(())
}

type Step = for<'a> fn(&'a SampleData) -> &'a str;

fn next_of(sd: &SampleData) -> &str {
    &sd.next
}

fn prev_of(sd: &SampleData) -> &str {
    &sd.prev
}

/// A record of `rows` on a cycle of `step` links that stays within `mine`, if there is one.
/// Each record is visited once: a walk stops at the chain's end, at a record outside the scene
/// or at one an earlier walk finished.
fn cycle<'a>(
    t: &'a Tables,
    rows: &[&'a SampleData],
    mine: &HashSet<&str>,
    step: Step,
) -> Option<&'a str> {
    // false: on the walk under way; true: finished.
    let mut state: HashMap<&str, bool> = HashMap::with_capacity(rows.len());
    for sd in rows {
        let mut path = Vec::new();
        let mut cur: Option<&SampleData> = Some(sd);
        while let Some(r) = cur {
            match state.get(r.token.as_str()) {
                Some(false) => return Some(&r.token),
                Some(true) => break,
                None => {}
            }
            state.insert(&r.token, false);
            path.push(r.token.as_str());
            cur = link(step(r))
                .filter(|n| mine.contains(n))
                .and_then(|n| t.sample_data.get(n, "").ok());
        }
        for tok in path {
            state.insert(tok, true);
        }
    }
    None
}

/// A keyframe's neighbours on its sensor's chain lie in the scene its sample belongs to.
fn keyframe_in_scene(t: &Tables, scene: &Scene, sd: &SampleData) -> Result<()> {
    for (dir, n) in [("prev", &sd.prev), ("next", &sd.next)] {
        let Some(n) = link(n) else { continue };
        let n = t
            .sample_data
            .get(n, &format!("sample_data {}.{dir}", sd.token))?;
        let s = t
            .sample
            .get(&n.sample_token, &format!("sample_data {}", n.token))?;
        if s.scene_token != scene.token {
            return Err(Error::input(
                &t.sample_data.file,
                &sd.token,
                format!(
                    "a keyframe filed under sample {} of scene {}, but its sensor chain ({dir} \
                     {}) runs through scene {}: its sample_token points to a sample of another \
                     scene",
                    sd.sample_token, scene.token, n.token, s.scene_token
                ),
            ));
        }
    }
    Ok(())
}

/// The instances annotated in the scene: `first_annotation_token` and
/// `last_annotation_token` exist, the `next` chain from the first stays with the instance,
/// does not loop, ends at the last and holds `nbr_annotations` annotations.
pub(crate) fn instance_chains(t: &Tables, samples: &[&Sample]) -> Result<()> {
    // Every annotation's instance first: a dangling one is reported as such, not as a chain
    // that strays into it.
    let mut seen: HashSet<&str> = HashSet::new();
    let mut instances = Vec::new();
    for s in samples {
        for &ai in t
            .anns_by_sample
            .get(s.token.as_str())
            .map_or(&[][..], Vec::as_slice)
        {
            let a = &t.sample_annotation.rows[ai];
            let referrer = format!("sample_annotation {}", a.token);
            let inst = t.instance.get(&a.instance_token, &referrer)?;
            if seen.insert(&a.instance_token) {
                instances.push(inst);
            }
        }
    }
    instances.into_iter().try_for_each(|i| instance_chain(t, i))
}

fn instance_chain(t: &Tables, inst: &Instance) -> Result<()> {
    let (ifile, afile) = (&t.instance.file, &t.sample_annotation.file);
    for (what, tok) in [
        ("first_annotation_token", &inst.first_annotation_token),
        ("last_annotation_token", &inst.last_annotation_token),
    ] {
        let why = if t.sample_annotation.is_duplicate(tok) {
            "is not unique: several sample_annotation records have it"
        } else if t.sample_annotation.get(tok, "").is_err() {
            "is dangling: sample_annotation.json has no such record"
        } else {
            continue;
        };
        return Err(Error::input(
            ifile,
            &inst.token,
            format!("{what} {tok:?} {why}"),
        ));
    }
    let mut seen: HashSet<&str> = HashSet::new();
    let mut last: Option<&SampleAnnotation> = None;
    let mut next = link(&inst.first_annotation_token);
    while let Some(tok) = next {
        let referrer = match last {
            Some(a) => format!("sample_annotation {}.next", a.token),
            None => format!("instance {}.first_annotation_token", inst.token),
        };
        let a = t.sample_annotation.get(tok, &referrer)?;
        if !seen.insert(&a.token) {
            return Err(Error::input(
                afile,
                &a.token,
                format!(
                    "the annotation chain of instance {} loops: {referrer} leads back to this \
                     annotation (a cycle)",
                    inst.token
                ),
            ));
        }
        if a.instance_token != inst.token {
            return Err(Error::input(
                afile,
                &a.token,
                format!(
                    "belongs to instance {} but is chained from instance {}",
                    a.instance_token, inst.token
                ),
            ));
        }
        last = Some(a);
        next = link(&a.next);
    }
    let end = last.map_or("", |a| a.token.as_str());
    if end != inst.last_annotation_token {
        return Err(Error::input(
            ifile,
            &inst.token,
            format!(
                "last_annotation_token {} is not the end of the annotation chain ({end})",
                inst.last_annotation_token
            ),
        ));
    }
    if seen.len() != inst.nbr_annotations as usize {
        return Err(Error::input(
            ifile,
            &inst.token,
            format!(
                "nbr_annotations is {} but the annotation chain holds {} annotations",
                inst.nbr_annotations,
                seen.len()
            ),
        ));
    }
    Ok(())
}
