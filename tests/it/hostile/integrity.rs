//! Linked records that do not hold together: nuScenes chains that loop, run on, stop short or
//! cross into another scene, counts that disagree with their chains, dangling chain ends, and
//! Frenetix logs whose frames do not move forward in time. Each rejects the one scene it
//! breaks, naming the table and the record; the other scene is kept.

use super::*;

fn rows(t: &Path, table: &str) -> Vec<Value> {
    serde_json::from_slice(&std::fs::read(nusc_table(t, table)).unwrap()).unwrap()
}

fn token(v: &Value) -> String {
    v["token"].as_str().unwrap().to_string()
}

/// The sample tokens of scene `i` (position in scene.json), in chain order.
fn samples_of(t: &Path, i: usize) -> Vec<String> {
    let scene = &rows(t, "scene")[i];
    let samples = rows(t, "sample");
    let mut out = vec![scene["first_sample_token"].as_str().unwrap().to_string()];
    loop {
        let s = samples
            .iter()
            .find(|s| s["token"] == out[out.len() - 1].as_str())
            .unwrap();
        match s["next"].as_str().unwrap() {
            "" => return out,
            n => out.push(n.to_string()),
        }
    }
}

/// Positions in sample_data.json of scene `i`'s CAM_FRONT chain (sweeps and keyframes), in
/// time order.
fn front_chain(t: &Path, i: usize) -> Vec<usize> {
    let samples = samples_of(t, i);
    let sd = rows(t, "sample_data");
    let mut v: Vec<usize> = (0..sd.len())
        .filter(|&k| {
            sd[k]["filename"].as_str().unwrap().contains("/CAM_FRONT/")
                && samples.iter().any(|s| sd[k]["sample_token"] == s.as_str())
        })
        .collect();
    v.sort_by_key(|&k| sd[k]["timestamp"].as_i64().unwrap());
    v
}

/// Sets `field` of record `at` of `table` to `value`.
fn set(t: &Path, table: &str, at: usize, field: &str, value: Value) {
    edit_json(&nusc_table(t, table), |v| v[at][field] = value.clone());
}

fn position(t: &Path, table: &str, tok: &str) -> usize {
    rows(t, table)
        .iter()
        .position(|r| r["token"] == tok)
        .unwrap()
}

/// An instance annotated in scene 0 (the first annotation of its second sample).
fn instance_of_scene_0(t: &Path) -> usize {
    let s = samples_of(t, 0)[1].clone();
    let a = rows(t, "sample_annotation")
        .into_iter()
        .find(|a| a["sample_token"] == s.as_str())
        .unwrap();
    position(t, "instance", a["instance_token"].as_str().unwrap())
}

pub(super) fn integrity_cases() -> Vec<Case> {
    let ing = ingest("nuscenes");
    let out = ["store"];
    let nusc = |name: &str, mutate: fn(&Path), needles: &[&str]| {
        case(
            format!("nuscenes {name}"),
            "nuscenes",
            mutate,
            &ing,
            &out,
            rejects(needles, 1),
        )
    };
    let frenetix = |name: &str, edit: fn(String) -> String, needles: &[&str]| {
        case(
            format!("frenetix {name}"),
            "frenetix",
            frenetix_edit(edit),
            &ingest("frenetix"),
            &out,
            rejects(needles, 1),
        )
    };
    vec![
        nusc(
            "keyframe filed under a sample of another scene",
            |t| {
                // A keyframe in the middle of scene 1's front chain, filed under scene 0.
                let sd = rows(t, "sample_data");
                let k = front_chain(t, 1)
                    .into_iter()
                    .filter(|&k| sd[k]["is_key_frame"] == true)
                    .nth(2)
                    .unwrap();
                let other = samples_of(t, 0)[2].clone();
                set(t, "sample_data", k, "sample_token", Value::String(other));
            },
            &["sample_data.json", "points to a sample of another scene"],
        ),
        nusc(
            "sample chain with a cycle",
            |t| {
                let s = samples_of(t, 0);
                let last = position(t, "sample", &s[s.len() - 1]);
                set(t, "sample", last, "next", Value::String(s[0].clone()));
            },
            &["sample.json", "loops"],
        ),
        nusc(
            "sample prev chain with a cycle",
            |t| {
                let s = samples_of(t, 0);
                let first = position(t, "sample", &s[0]);
                set(
                    t,
                    "sample",
                    first,
                    "prev",
                    Value::String(s[s.len() - 1].clone()),
                );
            },
            &["sample.json", "prev is"],
        ),
        nusc(
            "sample chain running past last_sample_token",
            |t| {
                let s = samples_of(t, 0);
                set(
                    t,
                    "scene",
                    0,
                    "last_sample_token",
                    s[s.len() - 2].clone().into(),
                );
            },
            &["scene.json", "does not end at last_sample_token"],
        ),
        nusc(
            "sample chain never reaching last_sample_token",
            |t| {
                let s = samples_of(t, 0);
                let before_last = position(t, "sample", &s[s.len() - 2]);
                set(t, "sample", before_last, "next", "".into());
            },
            &["scene.json", "never reaches last_sample_token"],
        ),
        nusc(
            "nbr_samples not the chain's length",
            |t| {
                let n = rows(t, "scene")[0]["nbr_samples"].as_u64().unwrap();
                set(t, "scene", 0, "nbr_samples", (n + 1).into());
            },
            &["scene.json", "nbr_samples"],
        ),
        nusc(
            "sample_data next chain with a cycle",
            |t| {
                let c = front_chain(t, 0);
                let first = token(&rows(t, "sample_data")[c[0]]);
                set(t, "sample_data", c[c.len() - 1], "next", first.into());
            },
            &["sample_data.json", "next chain", "loops"],
        ),
        nusc(
            "sample_data prev chain with a cycle",
            |t| {
                let c = front_chain(t, 0);
                let last = token(&rows(t, "sample_data")[c[c.len() - 1]]);
                set(t, "sample_data", c[0], "prev", last.into());
            },
            &["sample_data.json", "prev chain", "loops"],
        ),
        nusc(
            "sample_data chain running on into another scene",
            |t| {
                let c = front_chain(t, 0);
                let other = token(&rows(t, "sample_data")[front_chain(t, 1)[0]]);
                set(t, "sample_data", c[c.len() - 1], "next", other.into());
            },
            &["sample_data.json", "links disagree"],
        ),
        nusc(
            "instance first_annotation_token dangling",
            |t| {
                let i = instance_of_scene_0(t);
                set(t, "instance", i, "first_annotation_token", "nope".into());
            },
            &["instance.json", "first_annotation_token", "is dangling"],
        ),
        nusc(
            "instance last_annotation_token dangling",
            |t| {
                let i = instance_of_scene_0(t);
                set(t, "instance", i, "last_annotation_token", "nope".into());
            },
            &["instance.json", "last_annotation_token", "is dangling"],
        ),
        nusc(
            "nbr_annotations not the chain's length",
            |t| {
                let i = instance_of_scene_0(t);
                let n = rows(t, "instance")[i]["nbr_annotations"].as_u64().unwrap();
                set(t, "instance", i, "nbr_annotations", (n + 1).into());
            },
            &["instance.json", "nbr_annotations"],
        ),
        nusc(
            "annotation chain with a cycle",
            |t| {
                let inst = rows(t, "instance")[instance_of_scene_0(t)].clone();
                let last = inst["last_annotation_token"].as_str().unwrap();
                let first = inst["first_annotation_token"].clone();
                let at = position(t, "sample_annotation", last);
                set(t, "sample_annotation", at, "next", first);
            },
            &["sample_annotation.json", "loops"],
        ),
        frenetix(
            "frames sharing one timestamp",
            |s| {
                let mut l: Vec<String> = s.lines().map(String::from).collect();
                let step = l[2].split(';').next().unwrap().to_string();
                let mut cells: Vec<String> = l[3].split(';').map(String::from).collect();
                cells[0] = step;
                l[3] = cells.join(";");
                l.join("\n") + "\n"
            },
            &["Default_logs.csv", "line 4", "shares its timestamp"],
        ),
        frenetix(
            "frames going back in time",
            |s| {
                let mut l: Vec<String> = s.lines().map(String::from).collect();
                let mut cells: Vec<String> = l[5].split(';').map(String::from).collect();
                cells[0] = "1".into();
                l[5] = cells.join(";");
                l.join("\n") + "\n"
            },
            &["Default_logs.csv", "line 6", "goes back in time"],
        ),
    ]
}

#[test]
pub(super) fn linked_records_hold_together() {
    run_all(integrity_cases());
}
