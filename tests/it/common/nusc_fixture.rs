//! A tiny nuScenes-format dataset built by hand, independent of `drivegen synth`, so ingest
//! tests know every expected value. Tests mutate the tables before writing to inject faults.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use drivegen::formats::nuscenes::*;

pub const T0: i64 = 1_532_402_927_000_000;
/// Ego speed along +x (m/s).
pub const EGO_SPEED: f64 = 10.0;
/// The car's speed along +x (m/s).
pub const CAR_SPEED: f64 = 5.0;
pub const SAMPLES: usize = 5;

/// The rotation taking the camera frame (x right, y down, z forward) to the ego frame
/// (x forward, y left, z up): the camera looks along ego +x.
pub const CAM_FRONT_Q: [f64; 4] = [0.5, -0.5, 0.5, -0.5];

#[derive(Debug, Clone, Default)]
pub struct Fixture {
    pub category: Vec<Category>,
    pub attribute: Vec<Attribute>,
    pub visibility: Vec<Visibility>,
    pub instance: Vec<Instance>,
    pub sensor: Vec<Sensor>,
    pub calibrated_sensor: Vec<CalibratedSensor>,
    pub ego_pose: Vec<EgoPose>,
    pub log: Vec<Log>,
    pub scene: Vec<Scene>,
    pub sample: Vec<Sample>,
    pub sample_data: Vec<SampleData>,
    pub sample_annotation: Vec<SampleAnnotation>,
    pub map: Vec<Map>,
}

fn tok(parts: &[&str]) -> String {
    parts.join("_")
}

fn yaw_q(yaw: f64) -> [f64; 4] {
    [(yaw / 2.0).cos(), 0.0, 0.0, (yaw / 2.0).sin()]
}

impl Fixture {
    /// `n` scenes named `scene-000k`, each with [`SAMPLES`] keyframes at 2 Hz, a CAM_FRONT
    /// sweep halfway between keyframes, LIDAR_TOP keyframes, a moving car and a static
    /// pedestrian annotated on the first keyframe only.
    pub fn new(n: usize) -> Self {
        let mut f = Fixture {
            category: vec![
                Category {
                    token: "cat_car".into(),
                    name: "vehicle.car".into(),
                    description: String::new(),
                    index: None,
                },
                Category {
                    token: "cat_ped".into(),
                    name: "human.pedestrian.adult".into(),
                    description: String::new(),
                    index: None,
                },
            ],
            attribute: vec![Attribute {
                token: "att_moving".into(),
                name: "vehicle.moving".into(),
                description: String::new(),
            }],
            ..Fixture::default()
        };
        f.visibility = (1..=4)
            .map(|i| Visibility {
                token: i.to_string(),
                level: ["v0-40", "v40-60", "v60-80", "v80-100"][i - 1].into(),
                description: String::new(),
            })
            .collect();
        f.sensor = vec![
            Sensor {
                token: "sen_cam".into(),
                channel: "CAM_FRONT".into(),
                modality: "camera".into(),
            },
            Sensor {
                token: "sen_lidar".into(),
                channel: "LIDAR_TOP".into(),
                modality: "lidar".into(),
            },
        ];
        f.calibrated_sensor = vec![
            CalibratedSensor {
                token: "cs_cam".into(),
                sensor_token: "sen_cam".into(),
                translation: [1.7, 0.0, 1.5],
                rotation: CAM_FRONT_Q,
                camera_intrinsic: Some([
                    [1000.0, 0.0, 800.0],
                    [0.0, 1000.0, 450.0],
                    [0.0, 0.0, 1.0],
                ]),
            },
            CalibratedSensor {
                token: "cs_lidar".into(),
                sensor_token: "sen_lidar".into(),
                translation: [0.9, 0.0, 1.8],
                rotation: [1.0, 0.0, 0.0, 0.0],
                camera_intrinsic: None,
            },
        ];
        f.map = vec![Map {
            token: "map0".into(),
            log_tokens: vec![],
            category: "semantic_prior".into(),
            filename: "maps/m.png".into(),
        }];
        for s in 0..n {
            f.add_scene(s);
        }
        f
    }

    fn add_scene(&mut self, s: usize) {
        let ss = s.to_string();
        let log = tok(&["log", &ss]);
        self.log.push(Log {
            token: log.clone(),
            logfile: String::new(),
            vehicle: "n015".into(),
            date_captured: "2018-07-24".into(),
            location: "singapore-onenorth".into(),
        });
        self.map[0].log_tokens.push(log.clone());
        let t_scene = T0 + s as i64 * 100_000_000;
        let sample_tok = |k: usize| tok(&["sample", &ss, &k.to_string()]);
        let mut cam_chain: Vec<String> = Vec::new();
        let mut lidar_chain: Vec<String> = Vec::new();
        for k in 0..SAMPLES {
            let ts = t_scene + k as i64 * 500_000;
            self.sample.push(Sample {
                token: sample_tok(k),
                timestamp: ts,
                prev: if k > 0 {
                    sample_tok(k - 1)
                } else {
                    String::new()
                },
                next: if k + 1 < SAMPLES {
                    sample_tok(k + 1)
                } else {
                    String::new()
                },
                scene_token: tok(&["scene", &ss]),
            });
            // A sweep 250 ms before every keyframe but the first belongs to that keyframe.
            if k > 0 {
                let t_sweep = ts - 250_000;
                cam_chain.push(self.add_sd(&ss, "cam", k, t_sweep, false, &sample_tok(k)));
            }
            cam_chain.push(self.add_sd(&ss, "cam", k, ts + 10_000, true, &sample_tok(k)));
            lidar_chain.push(self.add_sd(&ss, "lidar", k, ts, true, &sample_tok(k)));
        }
        for chain in [&cam_chain, &lidar_chain] {
            self.link_chain(chain);
        }
        self.scene.push(Scene {
            token: tok(&["scene", &ss]),
            log_token: log,
            nbr_samples: SAMPLES as u32,
            first_sample_token: sample_tok(0),
            last_sample_token: sample_tok(SAMPLES - 1),
            name: format!("scene-{s:04}"),
            description: format!("fixture scene {s}"),
        });
        // The car: 20 m ahead at t=0, 3 m to the left, moving along +x.
        let car = tok(&["inst_car", &ss]);
        let ann = |k: usize| tok(&["ann_car", &ss, &k.to_string()]);
        for k in 0..SAMPLES {
            let t = k as f64 * 0.5;
            self.sample_annotation.push(SampleAnnotation {
                token: ann(k).into(),
                sample_token: sample_tok(k).into(),
                instance_token: car.clone().into(),
                visibility_token: "4".into(),
                attribute_tokens: vec!["att_moving".into()],
                translation: [20.0 + CAR_SPEED * t, 3.0, 0.8],
                size: [1.9, 4.5, 1.6],
                rotation: yaw_q(0.0),
                prev: if k > 0 {
                    ann(k - 1).into()
                } else {
                    String::new().into()
                },
                next: if k + 1 < SAMPLES {
                    ann(k + 1).into()
                } else {
                    String::new().into()
                },
                num_lidar_pts: 100,
                num_radar_pts: 2,
            });
        }
        self.instance.push(Instance {
            token: car,
            category_token: "cat_car".into(),
            nbr_annotations: SAMPLES as u32,
            first_annotation_token: ann(0),
            last_annotation_token: ann(SAMPLES - 1),
        });
        let ped = tok(&["inst_ped", &ss]);
        let pann = tok(&["ann_ped", &ss]);
        self.sample_annotation.push(SampleAnnotation {
            token: pann.clone().into(),
            sample_token: sample_tok(0).into(),
            instance_token: ped.clone().into(),
            visibility_token: String::new().into(),
            attribute_tokens: vec![],
            translation: [15.0, -4.0, 0.9],
            size: [0.6, 0.7, 1.8],
            rotation: yaw_q(std::f64::consts::FRAC_PI_2),
            prev: String::new().into(),
            next: String::new().into(),
            num_lidar_pts: 7,
            num_radar_pts: 0,
        });
        self.instance.push(Instance {
            token: ped,
            category_token: "cat_ped".into(),
            nbr_annotations: 1,
            first_annotation_token: pann.clone(),
            last_annotation_token: pann,
        });
    }

    fn add_sd(
        &mut self,
        ss: &str,
        kind: &str,
        k: usize,
        ts: i64,
        key: bool,
        sample: &str,
    ) -> String {
        let token = tok(&["sd", kind, ss, &k.to_string(), if key { "k" } else { "s" }]);
        let ep = tok(&["ep", kind, ss, &k.to_string(), if key { "k" } else { "s" }]);
        let t_rel = (ts - T0) as f64 * 1e-6;
        self.ego_pose.push(EgoPose {
            token: ep.clone().into(),
            timestamp: ts,
            rotation: [1.0, 0.0, 0.0, 0.0],
            translation: [EGO_SPEED * t_rel, 0.0, 0.0],
        });
        let (channel, fmt, w, h) = if kind == "cam" {
            ("CAM_FRONT", "jpg", 1600, 900)
        } else {
            ("LIDAR_TOP", "pcd", 0, 0)
        };
        let folder = if key { "samples" } else { "sweeps" };
        self.sample_data.push(SampleData {
            token: token.clone().into(),
            sample_token: sample.into(),
            ego_pose_token: ep.into(),
            calibrated_sensor_token: if kind == "cam" {
                "cs_cam".into()
            } else {
                "cs_lidar".into()
            },
            timestamp: ts,
            fileformat: fmt.into(),
            is_key_frame: key,
            height: h,
            width: w,
            filename: format!(
                "{folder}/{channel}/{token}.{}",
                if kind == "cam" { "jpg" } else { "pcd.bin" }
            ),
            prev: String::new().into(),
            next: String::new().into(),
        });
        token
    }

    fn link_chain(&mut self, chain: &[String]) {
        for (i, t) in chain.iter().enumerate() {
            let prev = if i > 0 {
                chain[i - 1].clone()
            } else {
                String::new()
            };
            let next = chain.get(i + 1).cloned().unwrap_or_default();
            if let Some(sd) = self.sample_data.iter_mut().find(|sd| &sd.token == t) {
                sd.prev = prev.into();
                sd.next = next.into();
            }
        }
    }

    /// Writes the tables under `root/version/` and an empty file for every sample_data.
    pub fn write(&self, root: &Path, version: &str) -> PathBuf {
        let dir = root.join(version);
        std::fs::create_dir_all(&dir).unwrap();
        fn put<T: serde::Serialize>(dir: &Path, name: &str, rows: &T) {
            std::fs::write(
                dir.join(format!("{name}.json")),
                serde_json::to_string_pretty(rows).unwrap(),
            )
            .unwrap();
        }
        put(&dir, "category", &self.category);
        put(&dir, "attribute", &self.attribute);
        put(&dir, "visibility", &self.visibility);
        put(&dir, "instance", &self.instance);
        put(&dir, "sensor", &self.sensor);
        put(&dir, "calibrated_sensor", &self.calibrated_sensor);
        put(&dir, "ego_pose", &self.ego_pose);
        put(&dir, "log", &self.log);
        put(&dir, "scene", &self.scene);
        put(&dir, "sample", &self.sample);
        put(&dir, "sample_data", &self.sample_data);
        put(&dir, "sample_annotation", &self.sample_annotation);
        put(&dir, "map", &self.map);
        for sd in &self.sample_data {
            let p = root.join(&sd.filename);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"x").unwrap();
        }
        std::fs::create_dir_all(root.join("maps")).unwrap();
        std::fs::write(root.join("maps/m.png"), b"").unwrap();
        dir
    }
}
