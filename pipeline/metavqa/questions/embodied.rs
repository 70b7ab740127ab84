//! The embodied programs: what one of our actions does, from the rollout table
//! (`docs/metavqa.md` §5.1).

use serde_json::json;

use super::words::{action_words, join, speed_ranges};
use super::{opt_f64, yes_no, Gen, Labels};
use crate::metavqa::rollout::SIDENESS;
use crate::metavqa::templates::{cat, o, pos_text, t};
use crate::metavqa::types::QuestionType as Q;

impl Gen<'_> {
    pub(super) fn embodied(&mut self, q: Q, k: u32) {
        let ro = self.ro;
        let cfg = self.cfg;
        let sb = self.rng.below(cfg.bins.speed_names.len() as u64) as usize;
        let a = self.rng.below(ro.action_names.len() as u64) as usize;
        let d = self.rng.below(ro.duration_steps.len() as u64) as usize;
        let secs = f64::from(ro.duration_steps[d]) * ro.dt_s;
        let prefix = format!(
            "Suppose our current speed is {} ({}), and we perform action \"{}\" for {secs:.1} seconds.",
            cfg.bins.speed_names[sb], cfg.bins.speed_ranges[sb], ro.action_names[a]
        );
        let variant = format!(
            "{k}:{}:{}:{}",
            cfg.bins.speed_names[sb], ro.action_names[a], ro.duration_steps[d]
        );
        let params = json!({
            "action": ro.action_names[a],
            "control": [cfg.rollout.actions[a].steer, cfg.rollout.actions[a].throttle],
            "duration_s": secs,
            "speeds_mps": cfg.rollout.speeds_mps[sb],
        });
        let cell = &ro.cells[a][d][sb];
        let before = self.out.len();
        match q {
            Q::EmbodiedDistance => {
                let Some(ans) = cell.distance else {
                    self.skips.tied_rollouts += 1;
                    return;
                };
                let opts = self.distance_options(ans);
                let ev = json!({"final_distance_bins": cell.distance_bins});
                self.push(
                    q,
                    variant,
                    Labels::Unmarked,
                    Vec::new(),
                    t(format!(
                        "{prefix} How far will we end up from our current position?"
                    )),
                    opts,
                    "most common final distance bin of the speed bin's bicycle-model rollouts",
                    params,
                    ev,
                );
            }
            Q::EmbodiedSideness => {
                let Some(ans) = cell.side else {
                    self.skips.tied_rollouts += 1;
                    return;
                };
                let opts = SIDENESS.iter().map(|p| t(pos_text(*p))).collect();
                let sides: Vec<&str> = cell.sides.iter().map(|&s| SIDENESS[s].code()).collect();
                self.push(
                    q,
                    variant,
                    Labels::Unmarked,
                    Vec::new(),
                    t(format!("{prefix} Which sector will we end up in?")),
                    (opts, ans),
                    "most common final sector of the rollouts' ego box w.r.t. the start box",
                    params,
                    json!({"final_sectors": sides}),
                );
            }
            _ => {
                let Some(&i) = self.sample_all(1).first() else {
                    return;
                };
                let (hit, times) = ro.collides(a, d, sb, &self.g.nodes[i].quad);
                let mean =
                    (!times.is_empty()).then(|| times.iter().sum::<f64>() / times.len() as f64);
                self.push(
                    q,
                    variant,
                    Labels::Qa,
                    vec![i],
                    cat(vec![
                        t(format!("{prefix} Will we run into object ")),
                        o(i),
                        t(", provided that it remains still?"),
                    ]),
                    yes_no(hit),
                    "any rollout's ego box (steps interpolated) ∩ object box (SAT)",
                    params,
                    json!({"hits": times.len(), "mean_hit_time_s": opt_f64(mean)}),
                );
            }
        }
        // The speed range and the action the question names, before what its answers mean.
        if let Some(draft) = self.out.get_mut(before) {
            let mut terms = vec![speed_ranges(cfg), action_words(cfg, a)];
            if q != Q::EmbodiedCollision {
                terms.push(
                    "The answer is the outcome for most starting speeds in that range.".into(),
                );
            }
            terms.push(std::mem::take(&mut draft.definitions));
            draft.definitions = join(terms);
        }
    }
}
