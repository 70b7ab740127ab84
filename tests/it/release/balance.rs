//! Greedy balancing (EgoDyn Algorithm 1): selections traced by hand, source caps and the
//! fallback, agreement with a naive string-based transcription of the paper's pseudo-code on
//! random pools, independence from pool order, and answer-letter balancing.

use crate::common;

use std::collections::BTreeMap;

use common::random::Rng;
use drivegen::balance::greedy::{select, BalanceSpec, Item, Mode};
use drivegen::balance::{self, balance_letters, balance_rows};
use drivegen::qa::{check_invariants, Layout, Prompt, QaRecord};

fn item(id: &str, source: &str, answers: &[(&str, &str)]) -> Item {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (q, a) in answers {
        m.entry(q.to_string()).or_default().push(a.to_string());
    }
    Item {
        id: id.into(),
        source: source.into(),
        answers: m,
    }
}

/// Type `a` has classes x, y; type `b` has p, q, r.
fn small_pool() -> Vec<Item> {
    vec![
        item("i1", "s1", &[("a", "x"), ("b", "p")]),
        item("i2", "s1", &[("a", "x"), ("b", "q")]),
        item("i3", "s1", &[("a", "x"), ("b", "r")]),
        item("i4", "s2", &[("a", "y"), ("b", "p")]),
        item("i5", "s2", &[("a", "x"), ("b", "p")]),
    ]
}

fn ids(pool: &[Item], chosen: &[usize]) -> Vec<String> {
    chosen.iter().map(|&i| pool[i].id.clone()).collect()
}

fn spec(target: usize, mode: Mode) -> BalanceSpec {
    BalanceSpec {
        target,
        mode,
        ..Default::default()
    }
}

#[test]
fn paper_mode_follows_the_hand_trace() {
    // Step 0: deficits a.x = a.y = 1/2 beat b's 1/3: (a, x) first; candidates i1 i2 i3 i5 all
    // score 1/3 on b, the first (i1) wins. Step 1: a.y = +1/2 is the largest deficit: i4.
    // Step 2: a is even (0, 0), b.p is over (1/3 − 1): b.q = +1/3 comes first: i2.
    let pool = small_pool();
    let s = select(&pool, &spec(3, Mode::Paper));
    assert_eq!(ids(&pool, &s.chosen), ["i1", "i4", "i2"]);
    assert_eq!((s.fallbacks, s.shortfall), (0, 0));
}

#[test]
fn released_mode_follows_the_hand_trace() {
    // Step 0: the first type (a), its first most-deficient class x: i1. Step 1: b deviates
    // most (p at 1 vs 1/3): its most deficient class q: i2. Step 2: a deviates by 1/2: y: i4.
    let pool = small_pool();
    let s = select(&pool, &spec(3, Mode::Released));
    assert_eq!(ids(&pool, &s.chosen), ["i1", "i2", "i4"]);
}

#[test]
fn source_caps_force_the_fallback_and_report_the_shortfall() {
    let pool = small_pool();
    let mut sp = spec(3, Mode::Paper);
    sp.source_caps.insert("s1".into(), 1);
    // Steps 0 and 1 as in the paper trace (i1, i4); step 2 wants b.q, only i2 has it and s1
    // is full: the fallback takes the first open item, i5.
    let s = select(&pool, &sp);
    assert_eq!(ids(&pool, &s.chosen), ["i1", "i4", "i5"]);
    assert_eq!(s.fallbacks, 1);
    sp.target = 10;
    let s = select(&pool, &sp);
    assert_eq!(s.chosen.len(), 3, "s1 capped at 1 + the two s2 items");
    assert_eq!(s.shortfall, 7);
}

/// The paper's pseudo-code, transcribed naively with strings and full recomputation.
fn naive(pool: &[Item], target: usize, caps: &BTreeMap<String, usize>) -> Vec<String> {
    let mut classes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for it in pool {
        for (q, a) in &it.answers {
            for c in a {
                let v = classes.entry(q.clone()).or_default();
                if !v.contains(c) {
                    v.push(c.clone());
                }
            }
        }
    }
    for v in classes.values_mut() {
        v.sort();
    }
    let mut sorted: Vec<&Item> = pool.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    let mut chosen: Vec<&Item> = Vec::new();
    while chosen.len() < target {
        let share = |q: &str, c: &str| -> f64 {
            let n: usize = chosen
                .iter()
                .map(|i| i.answers.get(q).map_or(0, |v| v.len()))
                .sum();
            let k = chosen
                .iter()
                .map(|i| {
                    i.answers
                        .get(q)
                        .map_or(0, |v| v.iter().filter(|a| *a == c).count())
                })
                .sum::<usize>();
            k as f64 / n.max(1) as f64
        };
        let deficit = |q: &str, c: &str| 1.0 / classes[q].len() as f64 - share(q, c);
        let mut want: Option<(String, String, f64)> = None;
        for (q, cs) in &classes {
            for c in cs {
                let d = deficit(q, c);
                if want.as_ref().is_none_or(|w| d > w.2) {
                    want = Some((q.clone(), c.clone(), d));
                }
            }
        }
        let (wq, wc, _) = want.unwrap();
        let open = |it: &Item| {
            !chosen.iter().any(|c| c.id == it.id)
                && chosen.iter().filter(|c| c.source == it.source).count()
                    < caps.get(&it.source).copied().unwrap_or(usize::MAX)
        };
        let mut v: Vec<&Item> = sorted
            .iter()
            .copied()
            .filter(|it| open(it) && it.answers.get(&wq).is_some_and(|a| a.contains(&wc)))
            .collect();
        if v.is_empty() {
            v = sorted.iter().copied().filter(|it| open(it)).collect();
        }
        if v.is_empty() {
            break;
        }
        let mut best: Option<(&Item, f64)> = None;
        for it in v {
            let h: f64 = it
                .answers
                .iter()
                .filter(|(q, _)| **q != wq)
                .flat_map(|(q, a)| a.iter().map(move |c| (q, c)))
                .map(|(q, c)| deficit(q, c).max(0.0))
                .sum();
            if best.is_none_or(|b| h > b.1) {
                best = Some((it, h));
            }
        }
        chosen.push(best.unwrap().0);
    }
    chosen.iter().map(|i| i.id.clone()).collect()
}

fn random_pool(rng: &mut Rng, n: usize) -> Vec<Item> {
    let types = [("turn", 3), ("brake", 4), ("yesno", 2), ("peak", 3)];
    (0..n)
        .map(|i| {
            let mut answers: Vec<(String, String)> = Vec::new();
            for (q, k) in types {
                if rng.below_u64(10) == 0 {
                    continue;
                }
                // Skewed: class 0 far more common, as in real driving logs.
                let r = rng.below_u64(100);
                let c = if r < 60 { 0 } else { 1 + rng.below_u64(k - 1) };
                answers.push((q.to_string(), format!("c{c}")));
            }
            let refs: Vec<(&str, &str)> = answers
                .iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect();
            item(
                &format!("clip{:04}", rng.below_u64(100_000) * 1000 + i as u64),
                ["nuscenes", "carla"][rng.below_u64(2) as usize],
                &refs,
            )
        })
        .collect()
}

#[test]
fn agrees_with_a_naive_transcription_on_random_pools_and_ignores_pool_order() {
    let mut rng = Rng(7);
    for case in 0..12 {
        let mut pool = random_pool(&mut rng, 40 + case * 7);
        let mut caps = BTreeMap::new();
        if case % 2 == 0 {
            caps.insert("carla".to_string(), 5 + case);
        }
        let target = 10 + case * 3;
        let sp = BalanceSpec {
            target,
            source_caps: caps.clone(),
            ..Default::default()
        };
        let got = ids(&pool, &select(&pool, &sp).chosen);
        assert_eq!(got, naive(&pool, target, &caps), "case {case}");
        pool.reverse();
        assert_eq!(
            ids(&pool, &select(&pool, &sp).chosen),
            got,
            "case {case}: order"
        );
    }
}

#[test]
fn balancing_flattens_a_skewed_pool() {
    let mut rng = Rng(11);
    let pool = random_pool(&mut rng, 600);
    let s = select(&pool, &spec(120, Mode::Paper));
    let share = |items: &[&Item], q: &str| -> f64 {
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        let mut n = 0;
        for it in items {
            for a in it.answers.get(q).into_iter().flatten() {
                *m.entry(a.as_str()).or_default() += 1;
                n += 1;
            }
        }
        *m.values().max().unwrap() as f64 / n as f64
    };
    let all: Vec<&Item> = pool.iter().collect();
    let sel: Vec<&Item> = s.chosen.iter().map(|&i| &pool[i]).collect();
    for q in ["turn", "brake", "yesno", "peak"] {
        let (before, after) = (share(&all, q), share(&sel, q));
        assert!(
            after < before - 0.1,
            "{q}: majority share {before} → {after}"
        );
    }
}

fn qa(id: &str, ty: &str, answer: usize, clip: &str) -> QaRecord {
    let choices: Vec<String> = ["left", "right", "straight"].map(String::from).to_vec();
    QaRecord {
        qa_id: id.into(),
        family: "egodyn".into(),
        question_type: ty.into(),
        prompt: Prompt::new(Layout::Sig, "Which way?"),
        answer: choices[answer].clone(),
        answer_index: answer as u8,
        answer_letter: ["A", "B", "C"][answer].into(),
        choices,
        source: "nuscenes".into(),
        scene_id: "s".into(),
        clip_id: Some(clip.into()),
        marks: "{}".into(),
        params: "{}".into(),
        evidence: "{}".into(),
        rule: "r".into(),
        ..Default::default()
    }
}

#[test]
fn letters_become_uniform_and_records_stay_valid() {
    // Every correct answer is "A" (index 0) before.
    let mut rows: Vec<QaRecord> = (0..30)
        .map(|i| qa(&format!("q{i:03}"), "turn_direction", 0, &format!("c{i}")))
        .collect();
    let answers: Vec<String> = rows.iter().map(|r| r.answer.clone()).collect();
    balance_letters(&mut rows);
    let mut per = BTreeMap::new();
    for (r, a) in rows.iter().zip(&answers) {
        *per.entry(r.answer_letter.clone()).or_insert(0) += 1;
        assert_eq!(
            &r.answer, a,
            "{}: the correct text must not change",
            r.qa_id
        );
        assert_eq!(r.choices[usize::from(r.answer_index)], r.answer);
        // The options block shows the new order.
        let line = format!("{}. {}", r.answer_letter, r.answer);
        let q = r.question();
        assert!(q.contains(&line), "{q}");
    }
    assert_eq!(per.values().copied().collect::<Vec<_>>(), [10, 10, 10]);
    check_invariants(&rows).unwrap();
}

#[test]
fn balance_rows_keeps_whole_items_and_caps_types() {
    let mut rows = Vec::new();
    for i in 0..20 {
        let a = if i < 15 { 0 } else { 1 + i % 2 };
        rows.push(qa(
            &format!("t{i:03}"),
            "turn_direction",
            a,
            &format!("c{i:02}"),
        ));
        rows.push(qa(&format!("u{i:03}"), "other", i % 3, &format!("c{i:02}")));
    }
    let (rows_out, o) = balance_rows(
        &rows,
        &balance::Options {
            spec: spec(8, Mode::Paper),
            type_cap: None,
            balance_letters: false,
            ..Default::default()
        },
    );
    assert_eq!(o.items_in, 20);
    assert_eq!(rows_out.len(), 16, "both questions of each of the 8 clips");
    assert!(o.after.overall_majority_accuracy() < o.before.overall_majority_accuracy());
    let (capped, _) = balance_rows(
        &rows,
        &balance::Options {
            spec: spec(8, Mode::Paper),
            type_cap: Some(3),
            balance_letters: false,
            ..Default::default()
        },
    );
    assert_eq!(capped.len(), 6);
}

/// Rows of 12 scenes × 5 clips × 3 types, answers skewed, ids unique.
fn table(rng: &mut Rng) -> Vec<QaRecord> {
    let mut rows = Vec::new();
    for s in 0..12 {
        for c in 0..5 {
            for ty in ["turn", "brake", "other"] {
                let a = if rng.below_u64(10) < 7 {
                    0
                } else {
                    1 + rng.below_u64(2) as usize
                };
                let mut r = qa(
                    &format!("egodyn-{:016x}", rng.below_u64(u64::MAX)),
                    ty,
                    a,
                    &format!("clip-{s:02}-{c}"),
                );
                r.scene_id = format!("scene-{s:02}");
                rows.push(r);
            }
        }
    }
    rows
}

/// Writes `rows` into `n` Arrow IPC files, dealt round-robin, in record batches of `batch`.
fn write_files(
    dir: &std::path::Path,
    rows: &[QaRecord],
    n: usize,
    batch: usize,
) -> Vec<std::path::PathBuf> {
    (0..n)
        .map(|f| {
            let mine: Vec<QaRecord> = rows.iter().skip(f).step_by(n).cloned().collect();
            let path = dir.join(format!("part{f}.arrow"));
            let file = std::fs::File::create(&path).unwrap();
            let mut w =
                arrow::ipc::writer::FileWriter::try_new(file, &drivegen::qa::qa_schema()).unwrap();
            for chunk in mine.chunks(batch) {
                w.write(&drivegen::qa::to_batch(chunk).unwrap()).unwrap();
            }
            w.finish().unwrap();
            path
        })
        .collect()
}

fn canonical_key(r: &QaRecord) -> (String, String, String, String, String) {
    (
        r.scene_id.clone(),
        r.clip_id.clone().unwrap(),
        r.family.clone(),
        r.question_type.clone(),
        r.qa_id.clone(),
    )
}

#[test]
fn streamed_balancing_matches_the_in_memory_result_over_shuffled_multi_batch_files() {
    let mut rng = Rng(7);
    let rows = table(&mut rng);
    // Shuffle, so that scenes are spread over every file and batch.
    let mut shuffled = rows.clone();
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.below_u64(i as u64 + 1) as usize);
    }
    let dir = tempfile::tempdir().unwrap();
    let files = write_files(dir.path(), &shuffled, 3, 7);
    let out = dir.path().join("out");
    let opts = balance::Options {
        inputs: files.clone(),
        out: out.clone(),
        spec: spec(20, Mode::Paper),
        type_cap: Some(15),
        balance_letters: true,
        ..Default::default()
    };
    std::fs::create_dir_all(&out).unwrap();
    let o = drivegen::balance::run(&opts).unwrap();
    let written = drivegen::qa::ipc::read_all(&[out.join("balanced_qa.arrow")]).unwrap();
    let (expected, _) = balance_rows(&rows, &opts);
    assert_eq!(written, expected, "same rows, same order, same letters");
    assert_eq!(o.rows, written.len());
    assert_eq!(written.len(), 45, "3 types capped at 15");
    let keys: Vec<_> = written.iter().map(canonical_key).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(
        keys, sorted,
        "canonical order (scene, item, family, type, id)"
    );
    check_invariants(&written).unwrap();

    // Gathering keeps every row, in the canonical order, untouched.
    let all = dir.path().join("all.arrow");
    assert_eq!(drivegen::balance::gather(&files, &all).unwrap(), rows.len());
    let gathered = drivegen::qa::ipc::read_all(&[all]).unwrap();
    let mut want = rows.clone();
    want.sort_by_key(canonical_key);
    assert_eq!(gathered, want);
}

/// Flattening keeps at most `ratio` × the rarest answer's rows per answer of each type; a quota
/// takes rows evenly across (type, answer).
#[test]
fn answers_are_flattened_and_quotas_keep_the_mix() {
    let mut rows = Vec::new();
    for i in 0..60 {
        // turn: 40 left, 12 right, 8 straight; other: uniform.
        let a = if i < 40 {
            0
        } else if i < 52 {
            1
        } else {
            2
        };
        rows.push(qa(&format!("t{i:03}"), "turn", a, &format!("c{i:02}")));
        rows.push(qa(&format!("u{i:03}"), "other", i % 3, &format!("c{i:02}")));
    }
    let count = |rows: &[QaRecord], ty: &str, a: &str| {
        rows.iter()
            .filter(|r| r.question_type == ty && r.answer == a)
            .count()
    };
    let flat = balance::Options {
        spec: spec(60, Mode::Paper),
        answer_ratio: Some(1.0),
        ..Default::default()
    };
    let (out, _) = balance_rows(&rows, &flat);
    for a in ["left", "right", "straight"] {
        assert_eq!(count(&out, "turn", a), 8, "{a}");
        assert_eq!(count(&out, "other", a), 20, "{a}");
    }
    let loose = balance::Options {
        answer_ratio: Some(1.5),
        ..flat.clone()
    };
    let (out, _) = balance_rows(&rows, &loose);
    assert_eq!(
        [
            count(&out, "turn", "left"),
            count(&out, "turn", "right"),
            count(&out, "turn", "straight")
        ],
        [12, 12, 8]
    );
    let quota = balance::Options {
        max_rows: Some(30),
        ..flat
    };
    let (out, _) = balance_rows(&rows, &quota);
    assert_eq!(out.len(), 30);
    for a in ["left", "right", "straight"] {
        assert_eq!(count(&out, "turn", a), 5, "{a}");
        assert_eq!(count(&out, "other", a), 5, "{a}");
    }
    assert_eq!(balance_rows(&rows, &quota).0, out, "deterministic");
}

/// A world built to be biased: trucks nearly always drive ahead of the ego vehicle, so "Where
/// is the truck?" is answered without looking. Rows of 20 scenes, options shuffled from the id.
fn biased_world(rng: &mut Rng) -> Vec<QaRecord> {
    let places = ["ahead", "behind", "to the left", "to the right"].map(String::from);
    let mut rows = Vec::new();
    for s in 0..20 {
        for k in 0..40 {
            let truck = k % 2 == 0;
            let place = if truck && rng.below_u64(10) < 8 {
                0
            } else {
                rng.below_u64(4) as usize
            };
            let noun = if truck { "truck" } else { "car" };
            let mut r = QaRecord {
                qa_id: format!("metavqa-{s:02}-{k:02}"),
                family: "metavqa".into(),
                question_type: "identify_position".into(),
                prompt: Prompt::new(
                    Layout::MetaVqa,
                    format!("Where is the {noun} marked {k} relative to the ego vehicle?"),
                ),
                source: "synthetic".into(),
                scene_id: format!("scene-{s:02}"),
                frame_idx: Some(k as u32),
                marks: "{}".into(),
                params: "{}".into(),
                evidence: "{}".into(),
                rule: "r".into(),
                ..Default::default()
            };
            drivegen::qa::set_answer(&mut r, &places, place, true).unwrap();
            rows.push(r);
        }
    }
    rows
}

/// An independent blind baseline, not the audit's: the most frequent answer per noun of the
/// question (the word after "the"), fitted on even scenes and scored on odd ones, and the other
/// way round. Returns its accuracy.
fn noun_prior(rows: &[QaRecord]) -> f64 {
    let noun = |r: &QaRecord| {
        let q = r.question();
        q.split("the ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .unwrap_or("")
            .to_string()
    };
    let half = |r: &QaRecord| r.scene_id.bytes().last().unwrap_or(0) % 2;
    let (mut right, mut all) = (0usize, 0usize);
    for held in 0..2u8 {
        let mut counts: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
        for r in rows.iter().filter(|r| half(r) != held) {
            *counts
                .entry(noun(r))
                .or_default()
                .entry(r.answer.clone())
                .or_default() += 1;
        }
        for r in rows.iter().filter(|r| half(r) == held) {
            let guess = counts
                .get(&noun(r))
                .and_then(|c| {
                    c.iter()
                        .max_by_key(|(a, n)| (**n, std::cmp::Reverse((*a).clone())))
                })
                .map(|(a, _)| a.clone());
            right += usize::from(guess.as_deref() == Some(r.answer.as_str()));
            all += 1;
        }
    }
    right as f64 / all.max(1) as f64
}

#[test]
fn the_blind_filter_brings_a_biased_world_within_the_margin() {
    let seed = common::random::seed();
    let rows = biased_world(&mut Rng(seed));
    // The bias is real, and the audit reports it.
    let before = noun_prior(&rows);
    assert!(before > 0.4, "noun prior {before:.3} (seed {seed})");
    let audit = drivegen::audit::audit(&rows);
    let fam = &audit.families["metavqa"];
    assert!(
        fam.excess() > 0.1,
        "the audit missed the bias: {fam:?} (seed {seed})"
    );
    let dir = tempfile::tempdir().unwrap();
    let files = write_files(dir.path(), &rows, 1, 64);
    let out = dir.path().join("out");
    let o = common::cli::bin()
        .args([
            "balance",
            "--target",
            "100000",
            "--max-blind-excess",
            "0.05",
            "--qa",
        ])
        .arg(&files[0])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    common::cli::ok(o, "drivegen balance --max-blind-excess 0.05");
    let kept = drivegen::qa::ipc::read_all(&[out.join("balanced_qa.arrow")]).unwrap();
    let dropped = std::fs::read_to_string(out.join("blind_filter.jsonl")).unwrap();
    assert_eq!(
        dropped.lines().count(),
        rows.len() - kept.len(),
        "every dropped row is recorded with its reason"
    );
    assert!(
        kept.len() >= rows.len() / 3,
        "{} of {} kept",
        kept.len(),
        rows.len()
    );
    let after = drivegen::audit::audit(&kept);
    assert!(
        after.families["metavqa"].excess() <= 0.05 + 1e-9,
        "{:?} (seed {seed})",
        after.families["metavqa"]
    );
    // Checked by a baseline the filter never saw, with room for sampling noise on ~400 rows.
    let independent = noun_prior(&kept);
    assert!(
        independent <= 0.25 + 0.05 + 0.06,
        "noun prior {independent:.3} after filtering (seed {seed})"
    );
}

/// A type whose rows offer five scenarios of which only two are ever right: pruning leaves
/// those two in every row (with their notes and the answer's letter following), drops the row
/// that could offer only its own answer, and the streamed run writes the same rows.
#[test]
fn options_never_right_in_a_type_are_taken_out() {
    let five = ["crossing", "jaywalking", "running", "standing", "walking"];
    let mut rows = Vec::new();
    for i in 0..12 {
        // Every pedestrian either stands or walks; the options are in a fixed order.
        let answer = if i % 3 == 0 { 4 } else { 3 };
        let mut r = qa(&format!("p{i:03}"), "agent", 0, &format!("c{i:02}"));
        r.family = "stsbench".into();
        r.prompt = Prompt::new(Layout::StsBench, "Which scenario?");
        r.choices = five.map(String::from).to_vec();
        for c in five {
            r.prompt = r.prompt.note(c, format!("{c}: defined"));
        }
        r.answer = five[answer].into();
        r.answer_index = answer as u8;
        r.answer_letter = ["A", "B", "C", "D", "E"][answer].into();
        rows.push(r);
    }
    // One vehicle question of the same type: its answer is right nowhere else and no other
    // option of it ever is, so once pruned it offers one option and goes.
    let mut v = qa("v000", "agent", 0, "c99");
    v.family = "stsbench".into();
    v.choices = ["accelerating", "stopping", "turning left"]
        .map(String::from)
        .to_vec();
    v.answer = "accelerating".into();
    rows.push(v);
    check_invariants(&rows).unwrap();
    let opts = balance::Options {
        spec: spec(100, Mode::Paper),
        prune_options: true,
        ..Default::default()
    };
    let (out, _) = balance_rows(&rows, &opts);
    assert_eq!(out.len(), 12, "the vehicle question is dropped");
    for r in &out {
        assert_eq!(r.choices, ["standing", "walking"], "{}", r.qa_id);
        let i = usize::from(r.answer_index);
        assert_eq!(r.choices[i], r.answer);
        assert_eq!(r.answer_letter, ["A", "B"][i]);
        let q = r.question();
        assert!(!q.contains("crossing") && !q.contains("running"), "{q}");
        assert!(
            q.contains("standing: defined") && q.contains("walking: defined"),
            "{q}"
        );
    }
    check_invariants(&out).unwrap();
    // Without pruning every option stays.
    let (kept, _) = balance_rows(
        &rows,
        &balance::Options {
            spec: spec(100, Mode::Paper),
            ..Default::default()
        },
    );
    assert_eq!(kept.len(), 13);
    assert!(kept.iter().any(|r| r.choices.len() == 5));
    // Streamed from files in two batches, the same rows.
    let dir = tempfile::tempdir().unwrap();
    let files = write_files(dir.path(), &rows, 2, 5);
    let o = dir.path().join("out");
    std::fs::create_dir_all(&o).unwrap();
    drivegen::balance::run(&balance::Options {
        inputs: files,
        out: o.clone(),
        ..opts.clone()
    })
    .unwrap();
    let written = drivegen::qa::ipc::read_all(&[o.join("balanced_qa.arrow")]).unwrap();
    assert_eq!(written, out);
}
