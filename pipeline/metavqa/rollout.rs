//! The ego rollouts behind the embodied questions (`docs/metavqa.md` §5.1), computed once per
//! config.
//!
//! MetaVQA looked answers up in 800 MetaDrive rollouts (5 actions × 4 durations × 40 initial
//! speeds, 10 per speed bin); we compute our own table with a kinematic bicycle model driven by
//! the same [steer, throttle] control pairs (`configs/metavqa.toml` `[rollout]`):
//!
//! ```text
//! δ = steer · max_steer        a = throttle · (max_accel if throttle ≥ 0 else max_decel)
//! x += v cos ψ dt   y += v sin ψ dt   ψ += v / wheelbase · tan δ · dt   v = max(0, v + a dt)
//! ```
//!
//! (rear-axle reference point, the ego pose; the pose update uses the speed at the start of
//! the step). Each (action, speed) is simulated for the longest duration and every duration
//! reads its prefix. Per (action, duration, speed bin) the table holds the answer of
//! `embodied_distance` (the most common final distance bin of the box centre's displacement
//! among the bin's speeds) and of `embodied_sideness` (the most common final position of the
//! ego box relative to its start box, `docs/metavqa.md` §4.1, folded to left-front / front /
//! right-front: any left component → left-front, any right component → right-front, else front); a
//! tie for the most common answer leaves the cell without an answer and no question is asked of it.
//! `embodied_collision` sweeps the rollouts' boxes, each step interpolated `collision_substeps`
//! times.

use serde::Serialize;

use super::config::MetavqaConfig;
use super::relations::{bin, overlap, position, quad, Pos, Quad};

/// The swept ego boxes of one run, each with its centre.
type Sweep = Vec<([f64; 2], Quad)>;

/// Options of `embodied_sideness`, in their canonical order.
pub(crate) const SIDENESS: [Pos; 3] = [Pos::Lf, Pos::F, Pos::Rf];

/// One simulated rollout: ego poses `[x, y, yaw]` at steps `0..=max_steps`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    pub speed_mps: f64,
    pub poses: Vec<[f64; 3]>,
}

/// The answers of one (action, duration, speed bin) cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// Final distance bin of every run of the bin.
    pub distance_bins: Vec<usize>,
    /// Final folded sector (index into [`SIDENESS`]) of every run.
    pub sides: Vec<usize>,
    /// The most common distance bin (None on a tie).
    pub distance: Option<usize>,
    /// The most common folded sector (None on a tie).
    pub side: Option<usize>,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rollouts {
    pub action_names: Vec<String>,
    pub duration_steps: Vec<u32>,
    pub dt_s: f64,
    /// `runs[action][speed_bin][k]`.
    pub runs: Vec<Vec<Vec<Run>>>,
    /// `cells[action][duration][speed_bin]`.
    pub cells: Vec<Vec<Vec<Cell>>>,
    ego_length: f64,
    ego_width: f64,
    ego_offset: f64,
    substeps: u32,
    /// `sweeps[action][speed_bin][k]`: [`Rollouts::sweep`] of each run.
    #[serde(skip)]
    sweeps: Vec<Vec<Vec<Sweep>>>,
}

/// The most common value of `v` among `0..n`, None when two values tie for it.
fn mode(v: &[usize], n: usize) -> Option<usize> {
    let mut counts = vec![0usize; n];
    for &x in v {
        if x < n {
            counts[x] += 1;
        }
    }
    let best = *counts.iter().max()?;
    let mut at = counts.iter().enumerate().filter(|(_, c)| **c == best);
    let first = at.next()?.0;
    at.next().is_none().then_some(first)
}

/// Folds a position (`docs/metavqa.md` §4.1) to an index into [`SIDENESS`].
pub(crate) fn fold_side(p: Pos) -> usize {
    match p {
        Pos::L | Pos::Lf | Pos::Lb => 0,
        Pos::R | Pos::Rf | Pos::Rb => 2,
        _ => 1,
    }
}

impl Rollouts {
    /// Simulates the table for `cfg`.
    pub fn new(cfg: &MetavqaConfig) -> Rollouts {
        let r = &cfg.rollout;
        let max_steps = r.duration_steps.iter().copied().max().unwrap_or(0);
        let runs: Vec<Vec<Vec<Run>>> = r
            .actions
            .iter()
            .map(|a| {
                r.speeds_mps
                    .iter()
                    .map(|speeds| {
                        speeds
                            .iter()
                            .map(|&v0| simulate(cfg, a.steer, a.throttle, v0, max_steps))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let mut table = Rollouts {
            action_names: r.actions.iter().map(|a| a.name.clone()).collect(),
            duration_steps: r.duration_steps.clone(),
            dt_s: r.dt_s,
            runs,
            cells: Vec::new(),
            ego_length: cfg.ego.length_m,
            ego_width: cfg.ego.width_m,
            ego_offset: cfg.ego.center_offset_m,
            substeps: r.collision_substeps,
            sweeps: Vec::new(),
        };
        table.sweeps = table
            .runs
            .iter()
            .map(|by_bin| {
                by_bin
                    .iter()
                    .map(|runs| runs.iter().map(|run| table.sweep(run)).collect())
                    .collect()
            })
            .collect();
        let start = table.ego_box([0.0, 0.0, 0.0]);
        let nbins = cfg.bins.distance_names.len();
        table.cells = table
            .runs
            .iter()
            .map(|by_bin| {
                r.duration_steps
                    .iter()
                    .map(|&d| {
                        by_bin
                            .iter()
                            .map(|runs| {
                                let (mut distance_bins, mut sides) = (Vec::new(), Vec::new());
                                for run in runs {
                                    let p = run.poses[d as usize];
                                    let c = table.box_centre(p);
                                    let dist = (c[0] - table.ego_offset).hypot(c[1]);
                                    distance_bins.push(bin(dist, &cfg.bins.distance_edges_m));
                                    sides.push(fold_side(position(&start, &table.ego_box(p))));
                                }
                                Cell {
                                    distance: mode(&distance_bins, nbins),
                                    side: mode(&sides, SIDENESS.len()),
                                    distance_bins,
                                    sides,
                                }
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        table
    }

    fn box_centre(&self, p: [f64; 3]) -> [f64; 2] {
        let (s, c) = p[2].sin_cos();
        [p[0] + c * self.ego_offset, p[1] + s * self.ego_offset]
    }

    /// The ego box at pose `p`.
    pub(crate) fn ego_box(&self, p: [f64; 3]) -> Quad {
        quad(self.box_centre(p), p[2], self.ego_length, self.ego_width)
    }

    /// The swept boxes of every run: `collision_substeps` interpolated poses per step and the
    /// final pose, with each box's centre.
    fn sweep(&self, run: &Run) -> Sweep {
        let sub = self.substeps.max(1);
        let mut v = Vec::with_capacity(run.poses.len() * sub as usize);
        for w in run.poses.windows(2) {
            let (a, b) = (w[0], w[1]);
            for j in 0..sub {
                let t = f64::from(j) / f64::from(sub);
                let p = [
                    a[0] + (b[0] - a[0]) * t,
                    a[1] + (b[1] - a[1]) * t,
                    a[2] + (b[2] - a[2]) * t,
                ];
                v.push((self.box_centre(p), self.ego_box(p)));
            }
        }
        if let Some(&last) = run.poses.last() {
            v.push((self.box_centre(last), self.ego_box(last)));
        }
        v
    }

    /// Whether any run of (`action`, `duration` index, `speed_bin`) overlaps the still box `q`
    /// at some interpolated step, and the first such time (s) of every run that hits.
    pub(crate) fn collides(
        &self,
        action: usize,
        duration: usize,
        speed_bin: usize,
        q: &Quad,
    ) -> (bool, Vec<f64>) {
        let sub = self.substeps.max(1) as usize;
        let last = self.duration_steps[duration] as usize * sub;
        let mut qc = [0.0, 0.0];
        for p in q {
            qc[0] += p[0] / 4.0;
            qc[1] += p[1] / 4.0;
        }
        let qr2 = q
            .iter()
            .map(|p| (p[0] - qc[0]).powi(2) + (p[1] - qc[1]).powi(2))
            .fold(0.0, f64::max);
        // Boxes whose bounding circles do not meet cannot overlap.
        let reach = (qr2.sqrt() + self.ego_length.hypot(self.ego_width) / 2.0).powi(2);
        let mut hits = Vec::new();
        for boxes in &self.sweeps[action][speed_bin] {
            let hit = boxes[..=last.min(boxes.len() - 1)]
                .iter()
                .position(|(c, b)| {
                    (c[0] - qc[0]).powi(2) + (c[1] - qc[1]).powi(2) <= reach && overlap(b, q)
                });
            if let Some(k) = hit {
                hits.push(k as f64 / sub as f64 * self.dt_s);
            }
        }
        (!hits.is_empty(), hits)
    }
}

/// One rollout of `max_steps` steps from speed `v0` (m/s) at the origin facing +x.
pub(crate) fn simulate(
    cfg: &MetavqaConfig,
    steer: f64,
    throttle: f64,
    v0: f64,
    max_steps: u32,
) -> Run {
    let r = &cfg.rollout;
    let delta = (steer * r.max_steer_deg).to_radians();
    let accel = if throttle >= 0.0 {
        throttle * r.max_accel_mps2
    } else {
        throttle * r.max_decel_mps2
    };
    let (mut x, mut y, mut psi, mut v) = (0.0f64, 0.0f64, 0.0f64, v0);
    let mut poses = vec![[x, y, psi]];
    for _ in 0..max_steps {
        x += v * psi.cos() * r.dt_s;
        y += v * psi.sin() * r.dt_s;
        psi += v / r.wheelbase_m * delta.tan() * r.dt_s;
        v = (v + accel * r.dt_s).max(0.0);
        poses.push([x, y, psi]);
    }
    Run {
        speed_mps: v0,
        poses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;

    #[test]
    fn straight_rollout_by_hand() {
        let cfg = MetavqaConfig::default_config().unwrap();
        // KEEP_STRAIGHT from 10 m/s: a = 0.15 · 5 = 0.75 m/s²; x after 5 steps of 0.1 s is
        // Σ_{k<5} (10 + 0.075 k) · 0.1 = 5 + 0.075 · 10 · 0.1 = 5.075.
        let run = simulate(&cfg, 0.0, 0.15, 10.0, 5);
        assert!((run.poses[5][0] - 5.075).abs() < 1e-12);
        assert_eq!(run.poses[5][1], 0.0);
        // BRAKE stops and stays stopped.
        let run = simulate(&cfg, 0.0, -0.26, 1.0, 20);
        let stop = run.poses[20][0];
        assert!(stop < 1.0 && (run.poses[19][0] - stop).abs() < 1e-12);
        assert_eq!(mode(&[1, 1, 2, 2], 4), None);
        assert_eq!(mode(&[1, 1, 2], 4), Some(1));
    }
}
