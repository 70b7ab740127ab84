//! From mined instances to questions: sub-sampling (`docs/stsbench.md` §7), a uniform draw of
//! distractors from the verified plausible scenarios, prompts that place the agents, and the QA
//! rows.

use serde_json::json;

use super::catalog::{Role, Scenario};
use super::config::StsConfig;
use super::mine::Instance;
use super::rules::plausible;
use crate::qa::record::{qa_id, set_answer, QaRecord, SplitMix64};
use crate::qa::{Layout, Prompt};
use crate::tracks::Track;

/// The family name.
pub(crate) const FAMILY: &str = crate::qa::Family::Stsbench.name();

/// Keeps the instances `docs/stsbench.md` §7 keeps, within one scene: agent scenarios (except
/// the exempt types) with a visible first frame and near the ego; then at most
/// `max_per_scenario` per (role, type) by farthest-point sampling on the mean ego-frame
/// position, starting from the first instance. A scene is the unit of work (a sharded build
/// gives the same rows as one machine), so the cap holds per scene; a release-wide quota is
/// the balance step's (`type_cap`, `max_rows`). Returns the kept indices in their original
/// order.
pub(crate) fn subsample(cfg: &StsConfig, inst: &[Instance]) -> Vec<usize> {
    let s = &cfg.sampling;
    let exempt = |sc: Scenario| s.exempt.iter().any(|e| e == sc.name());
    let mut groups: std::collections::BTreeMap<(Role, Scenario), Vec<usize>> = Default::default();
    for (k, i) in inst.iter().enumerate() {
        let agent = matches!(i.role, Role::Agent | Role::AgentEgo | Role::AgentAgent);
        if agent && !exempt(i.scenario) {
            let low = i
                .first_visibility
                .is_some_and(|v| s.low_visibility_bins.contains(&v));
            let far = i.mean_ego_xy[0].hypot(i.mean_ego_xy[1]) > s.max_mean_ego_distance;
            if low || far {
                continue;
            }
        }
        groups.entry((i.role, i.scenario)).or_default().push(k);
    }
    let mut kept = Vec::new();
    for ((role, sc), members) in groups {
        if role == Role::Ego
            || role == Role::EgoAgent
            || exempt(sc)
            || members.len() <= s.max_per_scenario
        {
            kept.extend(members);
            continue;
        }
        let pts: Vec<[f64; 2]> = members.iter().map(|&k| inst[k].mean_ego_xy).collect();
        kept.extend(
            farthest_points(&pts, s.max_per_scenario)
                .into_iter()
                .map(|j| members[j]),
        );
    }
    kept.sort_unstable();
    kept
}

/// Farthest-point sampling: starts at point 0 and repeatedly adds the point farthest from the
/// chosen set (the lowest index on ties). Returns `k` indices, ascending.
pub(crate) fn farthest_points(pts: &[[f64; 2]], k: usize) -> Vec<usize> {
    if pts.is_empty() || k == 0 {
        return Vec::new();
    }
    let d = |a: [f64; 2], b: [f64; 2]| (a[0] - b[0]).hypot(a[1] - b[1]);
    let mut chosen = vec![0usize];
    let mut near: Vec<f64> = pts.iter().map(|&p| d(p, pts[0])).collect();
    while chosen.len() < k.min(pts.len()) {
        let mut best = None;
        for (i, &v) in near.iter().enumerate() {
            if chosen.contains(&i) {
                continue;
            }
            if best.is_none_or(|(_, bv)| v > bv) {
                best = Some((i, v));
            }
        }
        let Some((i, _)) = best else { break };
        chosen.push(i);
        for (j, n) in near.iter_mut().enumerate() {
            *n = n.min(d(pts[j], pts[i]));
        }
    }
    chosen.sort_unstable();
    chosen
}

/// The names of the actor and the other object in the prompt and the options.
pub(crate) fn names(inst: &Instance, tracks: &[Track]) -> (String, String) {
    let agent_n = |k: usize| format!("agent {k}");
    let actor = if tracks[inst.actor].is_ego {
        "the ego vehicle".to_string()
    } else {
        agent_n(1)
    };
    let other = match inst.other {
        Some(o) if tracks[o].is_ego => "the ego vehicle".to_string(),
        Some(_) if tracks[inst.actor].is_ego => agent_n(1),
        _ => agent_n(2),
    };
    (actor, other)
}

/// The option text of `sc` with the objects named.
pub(crate) fn option_text(sc: Scenario, actor: &str, other: &str) -> String {
    let s = sc
        .short()
        .replace("{actor}", actor)
        .replace("{other}", other);
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => s,
    }
}

/// A camera view and the source image id, per window frame.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shown {
    pub cameras: Vec<String>,
    pub camera_frame_ids: Vec<String>,
    /// Per agent named in the prompt: its camera on the first frame, if any shows it.
    pub first_cameras: Vec<Option<String>>,
}

/// Everything a question needs beyond the instance.
pub(crate) struct QuestionInput<'a> {
    pub source: &'a str,
    pub scene_id: &'a str,
    pub tracks: &'a [Track],
    pub shown: Shown,
    pub seed: u64,
    pub config_hash: &'a str,
    pub window_seconds: f64,
}

fn describe_agent(name: &str, tr: &Track, ego: &Track, frame: u32, camera: Option<&str>) -> String {
    let (Some(i), Some(e)) = (tr.index_of(frame), ego.index_of(frame)) else {
        return format!("{} is a {}.", cap(name), tr.class.replace('_', " "));
    };
    let (dx, dy) = (tr.xy[i][0] - ego.xy[e][0], tr.xy[i][1] - ego.xy[e][1]);
    let (c, s) = (ego.yaw[e].cos(), ego.yaw[e].sin());
    let (x, y) = (dx * c + dy * s, -dx * s + dy * c);
    let cam = camera.map(|c| format!(", seen in {c}")).unwrap_or_default();
    format!(
        "{} is a {} at x = {x:.1} m, y = {y:.1} m from the ego vehicle in the first frame (x forward, y left){cam}.",
        cap(name),
        tr.class.replace('_', " ")
    )
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// The question about one instance, or `None` when too few verified negatives remain.
pub(crate) fn question(
    cfg: &StsConfig,
    inst: &Instance,
    q: QuestionInput<'_>,
) -> crate::Result<Option<QaRecord>> {
    let tracks = q.tracks;
    let actor_tr = &tracks[inst.actor];
    let other_tr = inst.other.map(|o| &tracks[o]);
    let f0 = inst.frames[0];
    let frames_ref = format!("{}..{}", f0, inst.frames[inst.frames.len() - 1]);
    let (question_type, stem) = kind(inst, tracks);
    let id = qa_id(
        FAMILY,
        question_type,
        &[
            q.source,
            q.scene_id,
            inst.role.name(),
            inst.scenario.name(),
            &actor_tr.id,
            other_tr.map(|t| t.id.as_str()).unwrap_or(""),
            &frames_ref,
        ],
        None,
        q.seed,
    );
    let (actor, other) = names(inst, tracks);
    // `_EGO` relations always name the ego as the other object.
    let text = |sc: Scenario| {
        let o = if sc.other_is_ego() {
            "the ego vehicle"
        } else {
            other.as_str()
        };
        option_text(sc, &actor, o)
    };
    let Some(drawn) = draw_distractors(cfg, inst, tracks, &id, &text) else {
        return Ok(None);
    };
    let mut shown_types = vec![inst.scenario];
    shown_types.extend(&drawn);
    let canonical: Vec<String> = shown_types.iter().map(|sc| text(*sc)).collect();
    let mut r = QaRecord {
        qa_id: id,
        family: FAMILY.into(),
        question_type: question_type.into(),
        source: q.source.into(),
        scene_id: q.scene_id.into(),
        frame_idx: Some(f0),
        clip_id: None,
        cameras: q.shown.cameras.clone(),
        camera_frame_ids: q.shown.camera_frame_ids.clone(),
        objects: [Some(actor_tr), other_tr]
            .into_iter()
            .flatten()
            .filter(|t| !t.is_ego)
            .map(|t| t.id.clone())
            .collect(),
        marks: "{}".into(),
        rule: format!("stsbench {} {}", inst.role.name(), inst.scenario.name()),
        params: json!({
            "config_hash": q.config_hash,
            "window_frames": cfg.window.frames,
            "role": inst.role.name(),
            "category": inst.role.category(),
            "scenario": inst.scenario.name(),
            "negatives_drawn": drawn.iter().map(|s| s.name()).collect::<Vec<_>>(),
        })
        .to_string(),
        evidence: inst.evidence.to_string(),
        seed: q.seed,
        ..Default::default()
    };
    set_answer(&mut r, &canonical, 0, true)?;
    r.prompt = prompt(inst, &q, (&actor, &other), &canonical, &shown_types, stem);
    Ok(Some(r))
}

/// The distractors of the question `id` asks, or `None` when it cannot be asked fairly. How many
/// it offers depends only on the objects named: `mcq.negatives`, or every other scenario
/// [`plausible`] for them when there are fewer. They are drawn uniformly from the verified ones
/// that read differently from the positive and from each other (as `text` writes them), so the
/// option set is the same draw whatever the answer; `None` when fewer than that number are
/// verified or fewer than `mcq.min_negatives` are plausible.
fn draw_distractors(
    cfg: &StsConfig,
    inst: &Instance,
    tracks: &[Track],
    id: &str,
    text: &impl Fn(Scenario) -> String,
) -> Option<Vec<Scenario>> {
    let other = inst.other.map(|o| tracks[o].kind);
    let pool = plausible(inst.role, tracks[inst.actor].kind, other).len();
    let want = cfg.mcq.negatives.min(pool.saturating_sub(1));
    if want < cfg.mcq.min_negatives {
        return None;
    }
    let mut seen = vec![text(inst.scenario)];
    let mut distinct: Vec<Scenario> = inst
        .negatives
        .iter()
        .copied()
        .filter(|sc| {
            let t = text(*sc);
            let new = !seen.contains(&t);
            seen.push(t);
            new
        })
        .collect();
    if distinct.len() < want {
        return None;
    }
    let mut rng = SplitMix64::new(crate::qa::record::shuffle_seed(&format!(
        "negatives\u{0}{id}"
    )));
    // A partial Fisher–Yates shuffle: the first `want` are a uniform draw without replacement.
    for i in 0..want {
        let j = i + rng.below((distinct.len() - i) as u64) as usize;
        distinct.swap(i, j);
    }
    distinct.truncate(want);
    Some(distinct)
}

/// The question type and stem: the role, and for agents whether they are vehicles or
/// pedestrians — what the prompt says anyway, and never the scenario, since a type that named the
/// answer would let a per-type prior answer every question. Answers are flattened, letters
/// spread and templates audited within these, so a pedestrian's scenarios are weighed against
/// each other, not against a vehicle's. The scenario is in `rule` and `params`.
fn kind(inst: &Instance, tracks: &[Track]) -> (&'static str, &'static str) {
    let human = tracks[inst.actor].kind == crate::tracks::Kind::Human;
    match (inst.role, human) {
        (Role::Ego, _) => ("ego", "What does the ego vehicle do in the clip?"),
        (Role::EgoAgent, _) => (
            "ego_agent",
            "What does the ego vehicle do relative to agent 1 in the clip?",
        ),
        (Role::AgentEgo, _) => (
            "agent_ego",
            "What does agent 1 do relative to the ego vehicle in the clip?",
        ),
        (Role::Agent, false) => (
            "agent_vehicle",
            "What does agent 1, a vehicle, do in the clip?",
        ),
        (Role::Agent, true) => (
            "agent_pedestrian",
            "What does agent 1, a pedestrian, do in the clip?",
        ),
        (Role::AgentAgent, false) => (
            "agent_agent_vehicle",
            "What do agent 1 and agent 2, two vehicles, do in the clip?",
        ),
        (Role::AgentAgent, true) => (
            "agent_agent_pedestrian",
            "What do agent 1 and agent 2, two pedestrians, do in the clip?",
        ),
    }
}

/// The prompt: who is who, the question, the options, and a definition per option (shown in
/// the options' order, so the glossary does not give the answer away).
fn prompt(
    inst: &Instance,
    q: &QuestionInput<'_>,
    (actor, other): (&str, &str),
    canonical: &[String],
    shown_types: &[Scenario],
    stem: &str,
) -> Prompt {
    let tracks = q.tracks;
    let actor_tr = &tracks[inst.actor];
    let other_tr = inst.other.map(|o| &tracks[o]);
    let ego = &tracks[0];
    let mut lines = vec![format!(
        "You are driving the ego vehicle. The clip shows {} keyframes over {:.1} s.",
        inst.frames.len(),
        q.window_seconds
    )];
    let mut agents: Vec<(&str, &Track)> = Vec::new();
    if !actor_tr.is_ego {
        agents.push((actor, actor_tr));
    }
    if let Some(o) = other_tr.filter(|t| !t.is_ego) {
        agents.push((other, o));
    }
    for (k, (name, tr)) in agents.iter().enumerate() {
        let cam = q.shown.first_cameras.get(k).cloned().flatten();
        lines.push(describe_agent(
            name,
            tr,
            ego,
            inst.frames[0],
            cam.as_deref(),
        ));
    }
    let mut prompt = Prompt::new(Layout::StsBench, stem)
        .preamble(lines.join("\n"))
        .postamble("Answer with the letter of the correct option.");
    for (c, sc) in canonical.iter().zip(shown_types) {
        prompt = prompt.note(c.clone(), format!("{}: {}", generic_text(*sc), sc.long()));
    }
    prompt
}

/// `sc` defined without the question's names: a scenario of two parties with "the first" and
/// "the second"; one of a single party by what it describes, without a subject ("stopping:
/// …").
fn generic_text(sc: Scenario) -> String {
    if sc.short().contains("{other}") {
        option_text(sc, "the first", "the second")
    } else {
        let s = sc
            .short()
            .replace("{actor} is ", "")
            .replace("{actor} ", "");
        let mut c = s.chars();
        c.next()
            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
            .unwrap_or_default()
    }
}
