//! Writes the synthetic world's ego drives as Frenetix CSV logs, the planner logs EgoDyn's
//! CARLA clips come from (`docs/egodyn.md` §1.3): `OUT/<scene>/Default_logs.csv`,
//! `;`-delimited, one row per 0.1 s step from the scene's start, with the current state first
//! in each comma-separated list (`theta_orientations_rad`, `velocities_mps`, followed by the
//! next two planned steps).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use super::uniform::{frame_times, scene_time};
use super::waymo::FormatSummary;
use super::world::SceneWorld;
use super::SynthOptions;
use crate::store::atomic::write_atomic;
use crate::Result;

/// The behaviour the synthetic logs are filed under.
pub(crate) const BEHAVIOR: &str = "Default";

const HEADER: &str =
    "trajectory_number;calculation_time_s;x_position_vehicle_m;y_position_vehicle_m;\
theta_orientations_rad;velocities_mps;accelerations_mps2;infeasible_kinematics_sum";

/// Writes one log per scene.
pub fn write(out: &Path, opts: &SynthOptions) -> Result<FormatSummary> {
    opts.validate()?;
    let _owned = crate::store::owner::Owned::claim(out, "synthetic corpus", "the corpus")?;
    let started = Instant::now();
    let mut summary = FormatSummary {
        format: "frenetix".into(),
        ..Default::default()
    };
    for k in 0..opts.scenes {
        let world = SceneWorld::build(opts.seed, k, opts.duration_s)?;
        let times = frame_times(&world, opts.duration_s);
        let mut text = String::from(HEADER);
        text.push('\n');
        for (i, &ts) in times.iter().enumerate() {
            let t = scene_time(&world, opts.duration_s, ts);
            let plan: Vec<_> = (0..3)
                .map(|j| world.ego_state(t + 0.1 * j as f64))
                .collect();
            let list = |f: &dyn Fn(&super::world::EgoState) -> f64| {
                plan.iter()
                    .map(|s| format!("{}", f(s)))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let e = &plan[0];
            // Writing into a String cannot fail.
            let _ = writeln!(
                text,
                "{i};0.05;{};{};{};{};{};0",
                e.x,
                e.y,
                list(&|s| s.yaw),
                list(&|s| s.speed),
                list(&|s| s.accel),
            );
        }
        write_atomic(
            &out.join(&world.name).join(format!("{BEHAVIOR}_logs.csv")),
            text.as_bytes(),
        )?;
        summary.frames += times.len();
        summary.scenes += 1;
    }
    summary.elapsed_s = started.elapsed().as_secs_f64();
    Ok(summary)
}
