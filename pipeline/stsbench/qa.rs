//! From mined instances to questions: sub-sampling (`docs/stsbench.md` §7), the rank-weighted draw
//! of distractors from the verified negatives, prompts that place the agents, and the QA rows.

use serde_json::json;

use super::catalog::{Role, Scenario};
use super::config::StsConfig;
use super::mine::Instance;
use crate::qa::record::{qa_id, set_answer, QaRecord};
use crate::qa::{Layout, Prompt};
use crate::tracks::{Kind, Track};
use std::collections::BTreeMap;

/// The family name.
pub const FAMILY: &str = "stsbench";

/// Keeps the instances `docs/stsbench.md` §7 keeps: agent scenarios (except the exempt types) with
/// a visible first frame and near the ego; then at most `max_per_scenario` per (role, type) by
/// farthest-point sampling on the mean ego-frame position, starting from the first instance.
/// Returns the kept indices in their original order.
pub fn subsample(cfg: &StsConfig, inst: &[(usize, &Instance)]) -> Vec<usize> {
    let s = &cfg.sampling;
    let exempt = |sc: Scenario| s.exempt.iter().any(|e| e == sc.name());
    let mut groups: std::collections::BTreeMap<(Role, Scenario), Vec<usize>> = Default::default();
    for (k, (_, i)) in inst.iter().enumerate() {
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
        let pts: Vec<[f64; 2]> = members.iter().map(|&k| inst[k].1.mean_ego_xy).collect();
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
pub fn farthest_points(pts: &[[f64; 2]], k: usize) -> Vec<usize> {
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

/// Who a question is about, as its prompt tells: the role, the actor's kind and the other
/// object's kind (the ego is a vehicle). Options are drawn only within one group, so the role
/// and the class names in the prompt rule none of them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub role: Role,
    pub actor: Kind,
    pub other: Option<Kind>,
}

impl Group {
    pub fn of(inst: &Instance, tracks: &[Track]) -> Self {
        let kind = |t: &Track| if t.is_ego { Kind::Vehicle } else { t.kind };
        Group {
            role: inst.role,
            actor: kind(&tracks[inst.actor]),
            other: inst.other.map(|o| kind(&tracks[o])),
        }
    }

    /// An ordered key (`Kind` has no order of its own).
    fn order(self) -> (Role, u8, u8) {
        let k = |k: Kind| match k {
            Kind::Vehicle => 1,
            Kind::Human => 2,
            Kind::Other => 3,
        };
        (self.role, k(self.actor), self.other.map_or(0, k))
    }

    /// The scenarios the role mines whose rule can hold for these kinds.
    pub fn plausible(self) -> Vec<Scenario> {
        self.role
            .scenarios()
            .iter()
            .copied()
            .filter(|sc| sc.applies(self.actor, self.other))
            .collect()
    }
}

/// One mined instance offered to [`plan`].
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    pub group: Group,
    pub answer: Scenario,
    /// Verified negatives, most confusable first.
    pub negatives: &'a [Scenario],
    /// A stable name (the question id), which orders and breaks ties.
    pub key: String,
}

fn hash(tag: &str, key: &str) -> u64 {
    crate::qa::record::shuffle_seed(&format!("{tag}\u{0}{key}"))
}

/// Chooses which instances become questions and their distractors, so that the option set
/// carries no signal about the answer. Departs from the paper's rank-weighted draw over every
/// listed negative (`docs/stsbench.md` §6), which let the role, the agent's class and the
/// option set give the answer away:
///
/// - options come only from one [`Group`]'s scenarios that are the answer of some kept
///   question of that group in this build (a scenario offered only as a distractor would be
///   ruled out by never being right);
/// - each group keeps at most `c` questions per answer, with `c` the largest cap under which
///   every answer can appear `options − 1` times as often as a distractor as it is right, so
///   that a scenario is the answer in about 1/options of the questions that offer it;
/// - the option count is the largest in `[mcq.min_negatives + 1, mcq.negatives + 1]` that keeps
///   at least `mcq.min_kept_share` of the rows the smallest count would keep;
/// - distractors are verified negatives picked by how far each scenario is below its share as a
///   distractor, the more confusable (earlier in the paper's list) first on a tie.
///
/// Returns per candidate its distractors, or `None` when it is not asked.
pub fn plan(cfg: &StsConfig, cands: &[Candidate<'_>]) -> Vec<Option<Vec<Scenario>>> {
    let mut out = vec![None; cands.len()];
    let mut groups: BTreeMap<(Role, u8, u8), Vec<usize>> = BTreeMap::new();
    for (i, c) in cands.iter().enumerate() {
        if c.group.plausible().contains(&c.answer) {
            groups.entry(c.group.order()).or_default().push(i);
        }
    }
    for members in groups.into_values() {
        let mut members = members;
        members.sort_by_key(|&i| (hash("order", &cands[i].key), i));
        let mut best: Vec<(usize, Vec<usize>, Vec<Scenario>)> = Vec::new();
        for k in cfg.mcq.min_negatives + 1..=cfg.mcq.negatives + 1 {
            if let Some((kept, pool)) = keep_balanced(cands, &members, k) {
                best.push((k, kept, pool));
            }
        }
        let most = best.iter().map(|b| b.1.len()).max().unwrap_or(0);
        let Some((k, kept, pool)) = best
            .into_iter()
            .rev()
            .find(|b| b.1.len() as f64 >= cfg.mcq.min_kept_share * most as f64)
        else {
            continue;
        };
        for (i, d) in assign(cands, &kept, &pool, k) {
            out[i] = Some(d);
        }
    }
    out
}

/// The distractors of `i` that `pool` allows.
fn usable(c: &Candidate<'_>, pool: &[Scenario]) -> Vec<Scenario> {
    c.negatives
        .iter()
        .copied()
        .filter(|n| *n != c.answer && pool.contains(n))
        .collect()
}

/// For `k` options: the members kept (at most `c` per answer, each with `k − 1` usable
/// distractors) and the pool of answers, or `None` when fewer than `k` answers remain.
fn keep_balanced(
    cands: &[Candidate<'_>],
    members: &[usize],
    k: usize,
) -> Option<(Vec<usize>, Vec<Scenario>)> {
    let mut pool: Vec<Scenario> = members.iter().map(|&i| cands[i].answer).collect();
    pool.sort_unstable();
    pool.dedup();
    // Dropping an answer from the pool can leave other members short of distractors; a few
    // rounds settle it (each round only shrinks the pool).
    loop {
        let viable: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| pool.contains(&cands[i].answer))
            .filter(|&i| usable(&cands[i], &pool).len() + 1 >= k)
            .collect();
        let mut next: Vec<Scenario> = viable.iter().map(|&i| cands[i].answer).collect();
        next.sort_unstable();
        next.dedup();
        if next.len() < k {
            return None;
        }
        if next == pool {
            let count = |sc: Scenario| viable.iter().filter(|&&i| cands[i].answer == sc).count();
            let counts: Vec<usize> = pool.iter().map(|&sc| count(sc)).collect();
            let total = |c: usize| counts.iter().map(|&n| n.min(c)).sum::<usize>();
            let cap = (1..=viable.len())
                .take_while(|&c| total(c) >= k * c)
                .last()?;
            let mut taken: BTreeMap<Scenario, usize> = BTreeMap::new();
            let kept = viable
                .into_iter()
                .filter(|&i| {
                    let t = taken.entry(cands[i].answer).or_default();
                    *t += 1;
                    *t <= cap
                })
                .collect();
            return Some((kept, pool));
        }
        pool = next;
    }
}

/// Distractors for the kept members: each scenario is owed `k − 1` distractor places per time it
/// is the answer; members with the fewest choices go first.
fn assign(
    cands: &[Candidate<'_>],
    kept: &[usize],
    pool: &[Scenario],
    k: usize,
) -> Vec<(usize, Vec<Scenario>)> {
    let mut owed: BTreeMap<Scenario, i64> = BTreeMap::new();
    for &i in kept {
        *owed.entry(cands[i].answer).or_default() += (k - 1) as i64;
    }
    let mut order = kept.to_vec();
    order.sort_by_key(|&i| usable(&cands[i], pool).len());
    let mut out = Vec::new();
    for i in order {
        let c = &cands[i];
        let mut choice: Vec<(usize, Scenario)> = usable(c, pool).into_iter().enumerate().collect();
        choice.sort_by_key(|&(rank, sc)| {
            (
                std::cmp::Reverse(owed.get(&sc).copied().unwrap_or(0)),
                rank,
                hash(sc.name(), &c.key),
            )
        });
        let drawn: Vec<Scenario> = choice.into_iter().take(k - 1).map(|(_, sc)| sc).collect();
        for sc in &drawn {
            *owed.entry(*sc).or_default() -= 1;
        }
        out.push((i, drawn));
    }
    out
}

/// The names of the actor and the other object in the prompt and the options.
pub fn names(inst: &Instance, tracks: &[Track]) -> (String, String) {
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
pub fn option_text(sc: Scenario, actor: &str, other: &str) -> String {
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
pub struct Shown {
    pub cameras: Vec<String>,
    pub camera_frame_ids: Vec<String>,
    /// Per agent named in the prompt: its camera on the first frame, if any shows it.
    pub first_cameras: Vec<Option<String>>,
}

/// Everything a question needs beyond the instance.
pub struct QuestionInput<'a> {
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

/// The id of the question about `inst`.
pub fn question_id(inst: &Instance, q: &QuestionInput<'_>) -> String {
    let tracks = q.tracks;
    let frames_ref = format!("{}..{}", inst.frames[0], inst.frames[inst.frames.len() - 1]);
    qa_id(
        FAMILY,
        &inst.scenario.name().to_ascii_lowercase(),
        &[
            q.source,
            q.scene_id,
            inst.role.name(),
            &tracks[inst.actor].id,
            inst.other.map(|o| tracks[o].id.as_str()).unwrap_or(""),
            &frames_ref,
        ],
        None,
        q.seed,
    )
}

/// The question about one instance with the distractors [`plan`] chose, or `None` when two
/// options would read the same.
pub fn question(
    inst: &Instance,
    q: QuestionInput<'_>,
    window_frames: usize,
    drawn: &[Scenario],
) -> crate::Result<Option<QaRecord>> {
    let tracks = q.tracks;
    let actor_tr = &tracks[inst.actor];
    let other_tr = inst.other.map(|o| &tracks[o]);
    let f0 = inst.frames[0];
    let question_type = inst.scenario.name().to_ascii_lowercase();
    let id = question_id(inst, &q);
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
    let mut shown_types = vec![inst.scenario];
    shown_types.extend(drawn);
    let canonical: Vec<String> = shown_types.iter().map(|sc| text(*sc)).collect();
    let mut distinct = canonical.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() != canonical.len() || drawn.is_empty() {
        return Ok(None);
    }
    let mut r = QaRecord {
        qa_id: id,
        family: FAMILY.into(),
        question_type,
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
            "window_frames": window_frames,
            "role": inst.role.name(),
            "category": inst.role.category(),
            "negatives_drawn": drawn.iter().map(|s| s.name()).collect::<Vec<_>>(),
        })
        .to_string(),
        evidence: inst.evidence.to_string(),
        seed: q.seed,
        ..Default::default()
    };
    set_answer(&mut r, &canonical, 0, true)?;
    r.prompt = prompt(inst, &q, &actor, &other, &canonical, &shown_types);
    Ok(Some(r))
}

/// The prompt: who is who, the question, the options, and a definition per option (shown in
/// the options' order, so the glossary does not give the answer away).
fn prompt(
    inst: &Instance,
    q: &QuestionInput<'_>,
    actor: &str,
    other: &str,
    canonical: &[String],
    shown_types: &[Scenario],
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
    let mut prompt = Prompt::new(
        Layout::StsBench,
        "Which of the following scenarios occurs in the clip?",
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qa::record::SplitMix64;

    /// Skewed answers (the first plausible scenario of a group is far more common than the
    /// rest, as STAND is among pedestrians) and verified negatives that lose a random few.
    fn candidates(n: usize) -> Vec<(Group, Scenario, Vec<Scenario>, String)> {
        let kinds = [Kind::Vehicle, Kind::Human];
        let mut rng = SplitMix64::new(7);
        let mut out = Vec::new();
        while out.len() < n {
            let role = Role::ALL[rng.below(5) as usize];
            let actor = if matches!(role, Role::Ego | Role::EgoAgent) {
                Kind::Vehicle
            } else {
                kinds[rng.below(2) as usize]
            };
            let other = match role {
                Role::Ego | Role::Agent => None,
                Role::AgentEgo => Some(Kind::Vehicle),
                _ => Some(kinds[rng.below(2) as usize]),
            };
            let group = Group { role, actor, other };
            let plausible = group.plausible();
            if plausible.is_empty() {
                continue;
            }
            let r = rng.below(100) as usize;
            let answer = if r < 50 {
                plausible[0]
            } else {
                plausible[r % plausible.len()]
            };
            let negatives: Vec<Scenario> = answer
                .negatives(actor == Kind::Human && other == Some(Kind::Human))
                .into_iter()
                .filter(|_| rng.below(10) != 0)
                .collect();
            out.push((group, answer, negatives, format!("q{}", out.len())));
        }
        out
    }

    #[test]
    fn options_are_plausible_and_carry_no_answer_signal() {
        let cfg = StsConfig::load(None).unwrap();
        let raw = candidates(6000);
        let cands: Vec<Candidate<'_>> = raw
            .iter()
            .map(|(group, answer, negatives, key)| Candidate {
                group: *group,
                answer: *answer,
                negatives,
                key: key.clone(),
            })
            .collect();
        let planned = plan(&cfg, &cands);
        // Per scenario: questions offering it, how often it was right, and the chance summed.
        let mut offered: BTreeMap<Scenario, (usize, usize, f64)> = BTreeMap::new();
        let mut asked = 0;
        for (c, p) in cands.iter().zip(&planned) {
            let Some(d) = p else { continue };
            asked += 1;
            let plausible = c.group.plausible();
            let mut options = vec![c.answer];
            options.extend(d);
            assert!(
                (2..=cfg.mcq.negatives + 1).contains(&options.len()),
                "{options:?}"
            );
            for o in &options {
                assert!(plausible.contains(o), "{o:?} offered to {:?}", c.group);
                assert_eq!(options.iter().filter(|x| *x == o).count(), 1);
            }
            for o in d {
                assert!(c.negatives.contains(o), "{o:?} is no verified negative");
            }
            for o in &options {
                let e = offered.entry(*o).or_default();
                e.0 += 1;
                e.1 += usize::from(*o == c.answer);
                e.2 += 1.0 / options.len() as f64;
            }
        }
        assert!(
            asked * 3 >= cands.len(),
            "only {asked} of {} asked",
            cands.len()
        );
        let mut checked = 0;
        for (sc, (n, right, chance)) in &offered {
            if *n < 100 {
                continue;
            }
            checked += 1;
            let rate = *right as f64 / *n as f64;
            let expect = chance / *n as f64;
            assert!(
                (rate - expect).abs() < 0.05,
                "{sc:?} is right in {rate:.3} of the {n} questions offering it, chance {expect:.3}"
            );
        }
        assert!(
            checked >= 20,
            "only {checked} scenarios offered often enough"
        );
    }

    #[test]
    fn a_group_with_one_answer_is_not_asked() {
        let cfg = StsConfig::load(None).unwrap();
        let group = Group {
            role: Role::Agent,
            actor: Kind::Human,
            other: None,
        };
        let negatives = Scenario::STAND.negatives(false);
        let cands: Vec<Candidate<'_>> = (0..10)
            .map(|i| Candidate {
                group,
                answer: Scenario::STAND,
                negatives: &negatives,
                key: format!("q{i}"),
            })
            .collect();
        assert!(plan(&cfg, &cands).iter().all(Option::is_none));
    }

    #[test]
    fn class_gating_matches_the_rules() {
        assert!(Scenario::WAIT_PED_CROSS.applies(Kind::Vehicle, Some(Kind::Human)));
        assert!(!Scenario::WAIT_PED_CROSS.applies(Kind::Vehicle, Some(Kind::Vehicle)));
        assert!(!Scenario::FOLLOW_AGENT.applies(Kind::Human, Some(Kind::Human)));
        assert!(Scenario::OVERTAKE_AGENT.applies(Kind::Human, Some(Kind::Human)));
        assert!(!Scenario::OVERTAKE_AGENT.applies(Kind::Vehicle, Some(Kind::Human)));
        assert!(!Scenario::ACCELERATE.applies(Kind::Human, None));
        assert!(!Scenario::STAND.applies(Kind::Vehicle, None));
    }
}
