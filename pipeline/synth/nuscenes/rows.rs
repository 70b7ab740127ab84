//! One scene's table rows: log, scene and samples, calibrated sensors, sample_data with their
//! ego poses, and the instances and annotations of every agent in range.

use std::collections::BTreeMap;

use nalgebra::{Isometry3, Vector3};

use super::super::render::ObjectPixels;
use super::super::rig::{self, CAMERAS};
use super::super::tokens::{token, Rng};
use super::super::world::{Agent, SceneWorld};
use super::images::ego_iso;
use super::lidar::{facing_faces, object_returns, LIDAR_DENSITY, LIDAR_RANGE};
use super::plan::{scene_time, Reading, ScenePlan};
use super::tables::Tables;
use super::{channel_name, ANNOTATION_RANGE, LIDAR};
use crate::formats::nuscenes::TokenStr;
use crate::formats::nuscenes::*;
use crate::geometry::{pose, quat_from_yaw};

/// One scene's table rows and point clouds, with the tokens its tables share.
pub(super) struct SceneRows<'a> {
    pub(super) seed: u64,
    /// The scene's index in the corpus.
    pub(super) k: usize,
    pub(super) world: &'a SceneWorld,
    pub(super) plan: &'a ScenePlan,
    /// Image width and height.
    pub(super) size: (u32, u32),
    pub(super) sample_tok: Vec<String>,
}

impl<'a> SceneRows<'a> {
    pub(super) fn new(
        seed: u64,
        k: usize,
        world: &'a SceneWorld,
        plan: &'a ScenePlan,
        size: (u32, u32),
    ) -> Self {
        let sample_tok = (0..plan.sample_ts.len())
            .map(|i| token(seed, &format!("sample/{k}/{i}")))
            .collect();
        Self {
            seed,
            k,
            world,
            plan,
            size,
            sample_tok,
        }
    }

    fn tok(&self, name: &str) -> String {
        token(self.seed, name)
    }

    /// The scene's log, scene and sample rows; returns the log's token.
    pub(super) fn push_scene(&self, t: &mut Tables) -> String {
        let (k, world, plan) = (self.k, self.world, self.plan);
        let sample_tok = &self.sample_tok;
        let scene_tok = self.tok(&format!("scene/{k}"));
        let log_tok = self.tok(&format!("log/{k}"));
        t.log.push(Log {
            token: log_tok.clone(),
            logfile: plan.logfile.clone(),
            vehicle: world.place.vehicle.into(),
            date_captured: plan.date.clone(),
            location: world.place.location.into(),
        });
        let n_samples = plan.sample_ts.len();
        t.scene.push(Scene {
            token: scene_tok.clone(),
            log_token: log_tok.clone(),
            nbr_samples: n_samples as u32,
            first_sample_token: sample_tok[0].clone(),
            last_sample_token: sample_tok[n_samples - 1].clone(),
            name: world.name.clone(),
            description: format!(
                "synthetic: {} [{}]",
                world.script.description, world.script.name
            ),
        });
        for (i, &ts) in plan.sample_ts.iter().enumerate() {
            t.sample.push(Sample {
                token: sample_tok[i].clone(),
                timestamp: ts,
                prev: if i > 0 {
                    sample_tok[i - 1].clone()
                } else {
                    String::new()
                },
                next: sample_tok.get(i + 1).cloned().unwrap_or_default(),
                scene_token: scene_tok.clone(),
            });
        }
        log_tok
    }

    /// The scene's calibrated sensors, one per channel; returns their tokens by channel.
    pub(super) fn push_calibrated_sensors(&self, t: &mut Tables) -> Vec<String> {
        let k = self.k;
        let (w, h) = self.size;
        let cs_tok: Vec<String> = (0..7)
            .map(|ch| self.tok(&format!("calibrated_sensor/{k}/{}", channel_name(ch))))
            .collect();
        for ch in 0..7 {
            let (translation, rotation, camera_intrinsic) = if ch == LIDAR {
                (rig::LIDAR_TOP_TRANSLATION, rig::LIDAR_TOP_ROTATION, None)
            } else {
                let c = &CAMERAS[ch];
                (c.translation, c.rotation, Some(c.intrinsic(w, h)))
            };
            t.calibrated_sensor.push(CalibratedSensor {
                token: cs_tok[ch].clone(),
                sensor_token: self.tok(&format!("sensor/{}", channel_name(ch))),
                translation,
                rotation,
                camera_intrinsic,
            });
        }
        cs_tok
    }

    /// sample_data and their ego poses, channel by channel; returns the number of images.
    pub(super) fn push_sample_data(&self, t: &mut Tables, cs_tok: &[String]) -> usize {
        let (k, world, plan) = (self.k, self.world, self.plan);
        let (w, h) = self.size;
        let mut images = 0;
        for (ch, list) in plan.readings.iter().enumerate() {
            let name = channel_name(ch);
            let sd_tok = |r: &Reading| self.tok(&format!("sample_data/{k}/{name}/{}", r.n));
            for (i, r) in list.iter().enumerate() {
                let ep_tok = self.tok(&format!("ego_pose/{k}/{name}/{}", r.n));
                let e = world.ego_state(scene_time(plan, r.ts));
                t.ego_pose.push(EgoPose {
                    token: ep_tok.as_str().into(),
                    timestamp: r.ts,
                    rotation: quat_from_yaw(e.yaw),
                    translation: [e.x, e.y, 0.0],
                });
                let (fileformat, width, height) = if ch == LIDAR {
                    ("pcd", 0, 0)
                } else {
                    ("jpg", w, h)
                };
                t.sample_data.push(SampleData {
                    token: sd_tok(r).into(),
                    sample_token: self.sample_tok[r.sample].as_str().into(),
                    ego_pose_token: ep_tok.into(),
                    calibrated_sensor_token: cs_tok[ch].as_str().into(),
                    timestamp: r.ts,
                    fileformat: fileformat.into(),
                    is_key_frame: r.key,
                    height,
                    width,
                    filename: r.filename.clone(),
                    prev: if i > 0 {
                        sd_tok(&list[i - 1]).into()
                    } else {
                        TokenStr::default()
                    },
                    next: list.get(i + 1).map(sd_tok).unwrap_or_default().into(),
                });
                if ch != LIDAR {
                    images += 1;
                }
            }
        }
        images
    }

    /// Which samples annotate each agent: from its first to its last in-range sample.
    fn annotated_samples(&self) -> BTreeMap<u32, Vec<usize>> {
        let (world, plan) = (self.world, self.plan);
        let mut per_agent: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, &ts) in plan.sample_ts.iter().enumerate() {
            let tt = scene_time(plan, ts);
            let e = world.ego_state(tt);
            for a in &world.agents {
                let st = a.state(tt);
                let d = ((st.center[0] - e.x).powi(2) + (st.center[1] - e.y).powi(2)).sqrt();
                if d <= ANNOTATION_RANGE {
                    per_agent.entry(a.id).or_default().push(i);
                }
            }
        }
        per_agent
    }

    /// Instances and sample annotations of every annotated agent, agent by agent; returns the
    /// object returns of the lidar per sample, gathered while annotating (`kf`: this scene's
    /// keyframe coverage).
    pub(super) fn push_annotations(
        &self,
        t: &mut Tables,
        kf: &[Vec<Vec<ObjectPixels>>],
    ) -> Vec<Vec<[f32; 5]>> {
        let mut clouds: Vec<Vec<[f32; 5]>> = vec![Vec::new(); self.plan.sample_ts.len()];
        let lidar_cs = pose(rig::LIDAR_TOP_TRANSLATION, rig::LIDAR_TOP_ROTATION);
        for (&id, samples) in &self.annotated_samples() {
            self.push_agent(t, id, samples, kf, &lidar_cs, &mut clouds);
        }
        clouds
    }

    /// One agent's instance and its annotations over `samples`, adding its lidar returns to
    /// `clouds` (`lidar_cs`: lidar → ego).
    fn push_agent(
        &self,
        t: &mut Tables,
        id: u32,
        samples: &[usize],
        kf: &[Vec<Vec<ObjectPixels>>],
        lidar_cs: &Isometry3<f64>,
        clouds: &mut [Vec<[f32; 5]>],
    ) {
        let (k, world, plan) = (self.k, self.world, self.plan);
        let agent = &world.agents[id as usize];
        let (first, last) = (samples[0], samples[samples.len() - 1]);
        let ann_tok = |i: usize| self.tok(&format!("sample_annotation/{k}/{id}/{i}"));
        let inst_tok = self.tok(&format!("instance/{k}/{id}"));
        t.instance.push(Instance {
            token: inst_tok.clone(),
            category_token: self.tok(&format!("category/{}", agent.kind.category)),
            nbr_annotations: (last - first + 1) as u32,
            first_annotation_token: ann_tok(first),
            last_annotation_token: ann_tok(last),
        });
        for i in first..=last {
            let tt = scene_time(plan, plan.sample_ts[i]);
            let st = agent.state(tt);
            let frac = visible_fraction(&kf[i], id);
            let lidar_to_global = ego_iso(world, tt) * lidar_cs;
            let lidar_pos = lidar_to_global.translation.vector;
            let dist = (Vector3::from(st.center) - lidar_pos).norm();
            let faces = facing_faces(st.center, st.yaw, agent.size, lidar_pos);
            let exposed: f64 = faces.iter().map(|f| f.3).sum();
            let n_lidar = if dist > LIDAR_RANGE || frac < 0.05 {
                0
            } else {
                (LIDAR_DENSITY * frac * exposed / (dist * dist)).round() as usize
            };
            let is_vehicle = agent.kind.category.starts_with("vehicle.");
            let n_radar = if is_vehicle && dist < 80.0 && frac > 0.1 {
                (2.0 + 40.0 * frac / dist.max(1.0)).round() as i64
            } else {
                0
            };
            if n_lidar > 0 {
                let mut rng = Rng::new(self.seed, &format!("lidar/{k}/{i}/{id}"));
                let inv = lidar_to_global.inverse();
                object_returns(
                    &mut rng,
                    n_lidar,
                    &faces,
                    exposed,
                    st.center,
                    &inv,
                    &mut clouds[i],
                );
            }
            t.sample_annotation.push(SampleAnnotation {
                token: ann_tok(i).into(),
                sample_token: self.sample_tok[i].as_str().into(),
                instance_token: inst_tok.as_str().into(),
                visibility_token: visibility_token(frac).into(),
                attribute_tokens: attribute_names(agent, st.speed)
                    .iter()
                    .map(|n| self.tok(&format!("attribute/{n}")).into())
                    .collect(),
                translation: st.center,
                size: agent.size,
                rotation: quat_from_yaw(st.yaw),
                prev: if i > first {
                    ann_tok(i - 1).into()
                } else {
                    TokenStr::default()
                },
                next: if i < last {
                    ann_tok(i + 1).into()
                } else {
                    TokenStr::default()
                },
                num_lidar_pts: n_lidar as i64,
                num_radar_pts: n_radar,
            });
        }
    }
}

fn attribute_names(agent: &Agent, speed: f64) -> Vec<&'static str> {
    let cat = agent.kind.category;
    if cat == "vehicle.bicycle" || cat == "vehicle.motorcycle" {
        vec![if agent.parked {
            "cycle.without_rider"
        } else {
            "cycle.with_rider"
        }]
    } else if cat.starts_with("vehicle.") {
        vec![if speed > 0.3 {
            "vehicle.moving"
        } else if agent.parked {
            "vehicle.parked"
        } else {
            "vehicle.stopped"
        }]
    } else if cat.starts_with("human.pedestrian.") {
        vec![if speed > 0.2 {
            "pedestrian.moving"
        } else {
            "pedestrian.standing"
        }]
    } else {
        Vec::new()
    }
}

fn visibility_token(frac: f64) -> &'static str {
    if frac < 0.4 {
        "1"
    } else if frac < 0.6 {
        "2"
    } else if frac < 0.8 {
        "3"
    } else {
        "4"
    }
}

/// The share of box `id` that a sample's six keyframe images show (0 when none shows it).
fn visible_fraction(cameras: &[Vec<ObjectPixels>], id: u32) -> f64 {
    let (vis, sil) = cameras
        .iter()
        .flatten()
        .filter(|o| o.id == id)
        .fold((0u64, 0u64), |(v, s), o| {
            (v + u64::from(o.visible), s + u64::from(o.silhouette))
        });
    if sil > 0 {
        vis as f64 / sil as f64
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visibility_bins() {
        assert_eq!(visibility_token(0.0), "1");
        assert_eq!(visibility_token(0.5), "2");
        assert_eq!(visibility_token(0.79), "3");
        assert_eq!(visibility_token(1.0), "4");
    }
}
