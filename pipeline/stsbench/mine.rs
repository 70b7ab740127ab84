//! Mining a scene: every role's candidates (the ego, each agent, each close pair), sliding
//! windows over their synchronised keyframes, runs of positive windows merged to their centre
//! window, and each instance's negatives verified on the same window.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::catalog::{Role, Scenario};
use super::config::StsConfig;
use super::rules::{check, distances, plausible, relative, yaw_diffs_deg, Ctx, Verdict, View};
use crate::tracks::{candidate_pairs, Kind, Track};

/// One mined scenario: a merged run's centre window.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub role: Role,
    pub scenario: Scenario,
    /// Index into the scene's tracks of the actor and of the other object (the ego for
    /// agent-w.r.t.-ego relations).
    pub actor: usize,
    pub other: Option<usize>,
    /// The window's keyframes.
    pub frames: Vec<u32>,
    /// The verified distractors ([`verified_negatives`]).
    pub negatives: Vec<Scenario>,
    /// The actor's mean position in the ego frame over the window (`[0, 0]` for the ego).
    pub mean_ego_xy: [f64; 2],
    /// The actor's visibility bin on the first keyframe.
    pub first_visibility: Option<u8>,
    /// The measured series behind the answer.
    pub evidence: Value,
}

/// What mining a scene found.
#[derive(Debug, Clone, Default)]
pub struct SceneMining {
    pub instances: Vec<Instance>,
    /// Windows examined.
    pub windows: u64,
    /// Per `role/SCENARIO`: windows not evaluated because the map lacks a layer.
    pub skipped_no_map: BTreeMap<String, u64>,
}

/// Start indices of the windows of `n` synchronised entries whose keyframes are consecutive.
pub fn window_starts(frames: &[u32], w: usize) -> Vec<usize> {
    if frames.len() < w {
        return Vec::new();
    }
    (0..=frames.len() - w)
        .filter(|&s| frames[s + w - 1] - frames[s] == (w - 1) as u32)
        .collect()
}

/// Merges positive windows: each run of positive windows with consecutive starts becomes its
/// centre start (the left of the two centres for even runs).
pub fn merge_runs(starts: &[usize], positive: &[bool]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut run: Vec<usize> = Vec::new();
    for (&s, &p) in starts.iter().zip(positive) {
        let continues = run.last().is_some_and(|&l| l + 1 == s);
        if (!p || !continues) && !run.is_empty() {
            out.push(run[(run.len() - 1) / 2]);
            run.clear();
        }
        if p {
            run.push(s);
        }
    }
    if !run.is_empty() {
        out.push(run[(run.len() - 1) / 2]);
    }
    out
}

/// The objects of one candidate, gathered on their common keyframes.
struct Gathered {
    a: Track,
    b: Option<Track>,
    ego: Track,
}

fn gather(a: &Track, b: Option<&Track>, ego: &Track) -> Gathered {
    // Common keyframes of all objects involved.
    let frames: Vec<u32> = a
        .frames
        .iter()
        .copied()
        .filter(|f| b.is_none_or(|b| b.index_of(*f).is_some()) && ego.index_of(*f).is_some())
        .collect();
    let pick = |t: &Track| -> Track {
        let idx: Vec<usize> = frames.iter().filter_map(|f| t.index_of(*f)).collect();
        t.gather(&idx)
    };
    Gathered {
        a: pick(a),
        b: b.map(pick),
        ego: pick(ego),
    }
}

fn evidence(ctx: &Ctx<'_>, frames: &[u32]) -> Value {
    let r = |v: &[f64]| {
        v.iter()
            .map(|x| (x * 1e4).round() / 1e4)
            .collect::<Vec<_>>()
    };
    let mut e = json!({
        "frames": frames,
        "actor_speed": r(ctx.a.v()),
        "actor_yaw_change_rad": (crate::geometry::wrap_pi(ctx.a.yaw()[ctx.a.w - 1] - ctx.a.yaw()[0]) * 1e4).round() / 1e4,
    });
    if let Some(b) = ctx.b {
        let rel = relative(&ctx.a, &b);
        e["other_speed"] = json!(r(b.v()));
        e["distance"] = json!(r(&distances(&ctx.a, &b)));
        e["x_rel"] = json!(r(&rel.iter().map(|p| p[0]).collect::<Vec<_>>()));
        e["y_rel"] = json!(r(&rel.iter().map(|p| p[1]).collect::<Vec<_>>()));
        e["yaw_diff_deg"] = json!(r(&yaw_diffs_deg(&ctx.a, &b)));
        if let Some(pc) = b.ped_crossing() {
            e["other_in_ped_crossing"] = json!(pc);
        }
    }
    if let Some(ego) = ctx.ego.filter(|e| e.tr.id != ctx.a.tr.id) {
        e["distance_to_ego"] = json!(r(&distances(&ctx.a, &ego)));
    }
    for (k, v) in [
        ("actor_in_ped_crossing", ctx.a.ped_crossing()),
        ("actor_in_drivable_area", ctx.a.drivable()),
        ("actor_on_walkway", ctx.a.walkway()),
    ] {
        if let Some(v) = v {
            e[k] = json!(v);
        }
    }
    if let Some(lc) = ctx.a.lane_changes() {
        e["actor_lane_changes"] = json!(lc);
    }
    e
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// The distractors a question about `sc` may offer: the other scenarios [`plausible`] for these
/// objects in `role`, each verified not to hold in the window (a scenario that holds or cannot
/// be checked for lack of a map layer is left out), and a pedestrian's RUN/WALK/STAND by its
/// median speed, so that no distractor is nearly true. In catalog order.
pub fn verified_negatives(
    cfg: &StsConfig,
    role: Role,
    sc: Scenario,
    ctx: &Ctx<'_>,
) -> Vec<Scenario> {
    let med = median(ctx.a.v());
    let n = &cfg.negatives;
    plausible(role, ctx.a.tr.kind, ctx.b.map(|b| b.tr.kind))
        .into_iter()
        .filter(|neg| *neg != sc)
        .filter(|neg| check(cfg, *neg, ctx, false) == Verdict::No)
        .filter(|neg| {
            ctx.a.tr.kind != Kind::Human
                || match neg {
                    Scenario::RUN => med <= n.run_median,
                    Scenario::WALK => !(n.walk_median_min..=n.run_median).contains(&med),
                    Scenario::STAND => med >= n.walk_median_min,
                    _ => true,
                }
        })
        .collect()
}

fn mean_ego_xy(a: &View<'_>, ego: &View<'_>) -> [f64; 2] {
    if a.tr.is_ego {
        return [0.0, 0.0];
    }
    let rel = relative(a, ego);
    let n = rel.len().max(1) as f64;
    [
        rel.iter().map(|p| p[0]).sum::<f64>() / n,
        rel.iter().map(|p| p[1]).sum::<f64>() / n,
    ]
}

/// Mines every scenario of `role` for one candidate (actor index, other index).
fn mine_candidate(
    cfg: &StsConfig,
    tracks: &[Track],
    role: Role,
    actor: usize,
    other: Option<usize>,
    out: &mut SceneMining,
) {
    let w = cfg.window.frames;
    let ego_tr = &tracks[0];
    let g = gather(&tracks[actor], other.map(|o| &tracks[o]), ego_tr);
    let starts = window_starts(&g.a.frames, w);
    if starts.is_empty() {
        return;
    }
    // For agent-w.r.t.-ego relations the other object is the ego itself.
    let b_track = if role == Role::AgentEgo {
        Some(&g.ego)
    } else {
        g.b.as_ref()
    };
    let ctx_at = |s: usize| Ctx {
        a: View::new(&g.a, s, w),
        b: b_track.map(|b| View::new(b, s, w)),
        ego: Some(View::new(&g.ego, s, w)),
    };
    let kinds = (g.a.kind, b_track.map(|b| b.kind));
    out.windows += starts.len() as u64;
    for &sc in role.scenarios() {
        if !super::rules::gate(sc, kinds.0, kinds.1) {
            continue;
        }
        let mut positive = Vec::with_capacity(starts.len());
        for &s in &starts {
            let v = check(cfg, sc, &ctx_at(s), true);
            if let Verdict::NeedsMap(_) = v {
                *out.skipped_no_map
                    .entry(format!("{}/{}", role.name(), sc.name()))
                    .or_default() += 1;
            }
            positive.push(v == Verdict::Holds);
        }
        for s in merge_runs(&starts, &positive) {
            let ctx = ctx_at(s);
            let frames = g.a.frames[s..s + w].to_vec();
            out.instances.push(Instance {
                role,
                scenario: sc,
                actor,
                other: if role == Role::AgentEgo {
                    Some(0)
                } else {
                    other
                },
                negatives: verified_negatives(cfg, role, sc, &ctx),
                mean_ego_xy: mean_ego_xy(&ctx.a, &View::new(&g.ego, s, w)),
                first_visibility: g.a.visibility[s],
                evidence: evidence(&ctx, &frames),
                frames,
            });
        }
    }
}

/// Mines one scene's tracks (`tracks[0]` is the ego).
pub fn mine_scene(cfg: &StsConfig, tracks: &[Track]) -> SceneMining {
    let mut out = SceneMining::default();
    if tracks.is_empty() {
        return out;
    }
    mine_candidate(cfg, tracks, Role::Ego, 0, None, &mut out);
    for i in 1..tracks.len() {
        if tracks[i].kind == Kind::Other {
            continue;
        }
        mine_candidate(cfg, tracks, Role::Agent, i, None, &mut out);
        mine_candidate(cfg, tracks, Role::AgentEgo, i, None, &mut out);
    }
    for (i, j) in candidate_pairs(tracks, cfg.pair_radius()) {
        if tracks[i].kind == Kind::Other || tracks[j].kind == Kind::Other {
            continue;
        }
        if i == 0 {
            mine_candidate(cfg, tracks, Role::EgoAgent, 0, Some(j), &mut out);
        } else {
            mine_candidate(cfg, tracks, Role::AgentAgent, i, Some(j), &mut out);
            mine_candidate(cfg, tracks, Role::AgentAgent, j, Some(i), &mut out);
        }
    }
    out
}
