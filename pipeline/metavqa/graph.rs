//! The scene graph of one keyframe camera image (`docs/metavqa.md` §4): the objects the visibility
//! stage kept in that image, in the ego's BEV frame at the keyframe (x forward, y left, origin at
//! the keyframe's ego pose from `frames.arrow`; only the ego's yaw is used, the plane is the ground
//! plane).
//!
//! Relations are not stored as edge lists: [`SceneGraph::relation`] applies the box-extent rule
//! to any pair on demand (what the questions need), and the per-node attributes the questions
//! read often (ego-relative position, heading sector, distance and speed bins) are computed
//! once here.

use serde::Serialize;

use super::config::MetavqaConfig;
use super::relations::{bin, heading_sector, position, quad, Pos, Quad, P2};
use crate::store::{FrameRow, ObjectRow};

/// What the visibility table says about a kept object in one image.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KeptMark {
    pub track_id: String,
    pub annotation_id: String,
    /// `[x0, y0, x1, y1]`, pixels, not clipped.
    pub amodal: [f64; 4],
    /// `[x0, y0, x1, y1]`, pixel edges.
    pub modal: Option<[f64; 4]>,
    pub visible_pixels: u32,
    /// Pixel-centre coordinates of the Set-of-Mark anchor.
    pub anchor: Option<[f64; 2]>,
}

/// One labelled object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    pub track_id: String,
    pub annotation_id: String,
    /// Unified class (`configs/taxonomy.toml`).
    pub class: String,
    /// Display name of the class.
    pub type_name: String,
    /// From a colour attribute, when the source has one.
    pub color: Option<String>,
    /// Box centre in the ego frame (m).
    pub center: P2,
    /// Heading in the ego frame (rad, counter-clockwise from our front).
    pub yaw: f64,
    pub has_heading: bool,
    /// ‖(vx, vy)‖ (m/s), when the source gives a velocity.
    pub speed: Option<f64>,
    pub length: f64,
    pub width: f64,
    /// BEV box corners in the ego frame.
    pub quad: Quad,
    /// BEV distance from the ego pose to the box centre (m).
    pub distance: f64,
    /// Relative position to the ego box (`docs/metavqa.md` §4.1).
    pub sector: Pos,
    /// Heading sector relative to our heading (`docs/metavqa.md` §4.2).
    pub heading_sector: Pos,
    pub distance_bin: usize,
    pub speed_bin: Option<usize>,
    #[serde(skip)]
    pub mark: KeptMark,
}

/// The graph of one camera image.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneGraph {
    pub source: String,
    pub scene_id: String,
    pub frame_idx: u32,
    pub camera: String,
    pub camera_frame_id: String,
    pub width: u32,
    pub height: u32,
    /// The ego's BEV box (centre `ego.center_offset_m` ahead of the pose).
    pub ego: Quad,
    /// Kept objects in visibility-table order (their full-image labels are their indices).
    pub nodes: Vec<Node>,
}

/// The yaw of a `[w, x, y, z]` rotation about z.
pub(crate) fn quat_yaw(q: [f64; 4]) -> f64 {
    let [w, x, y, z] = q;
    (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))
}

/// The ego's BEV box for `cfg`.
pub fn ego_quad(cfg: &MetavqaConfig) -> Quad {
    quad(
        [cfg.ego.center_offset_m, 0.0],
        0.0,
        cfg.ego.length_m,
        cfg.ego.width_m,
    )
}

/// A colour attribute of `o` (`prefix` + name), capitalised.
fn color_of(o: &ObjectRow, prefix: &str) -> Option<String> {
    if prefix.is_empty() {
        return None;
    }
    o.attributes.iter().find_map(|a| {
        let name = a.strip_prefix(prefix)?.trim();
        let mut c = name.chars();
        let first = c.next()?;
        Some(
            first
                .to_uppercase()
                .chain(c.flat_map(char::to_lowercase))
                .collect(),
        )
    })
}

impl Node {
    /// The node of store object `o` seen from `frame`'s ego pose.
    pub fn new(o: &ObjectRow, frame: &FrameRow, mark: KeptMark, cfg: &MetavqaConfig) -> Node {
        let ego_yaw = quat_yaw(frame.ego.q);
        let (s, c) = ego_yaw.sin_cos();
        let d = [o.center[0] - frame.ego.t[0], o.center[1] - frame.ego.t[1]];
        let center = [c * d[0] + s * d[1], -s * d[0] + c * d[1]];
        let yaw = o.yaw - ego_yaw;
        let [w, l, _] = o.size_wlh;
        let speed = match (o.vx, o.vy) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => Some(x.hypot(y)),
            _ => None,
        };
        let q = quad(center, yaw, l, w);
        let distance = center[0].hypot(center[1]);
        let b = &cfg.bins;
        Node {
            track_id: o.track_id.clone(),
            annotation_id: o.annotation_id.clone(),
            class: o.class.clone(),
            type_name: cfg.class_name(&o.class).to_string(),
            color: color_of(o, &cfg.rules.color_attribute_prefix),
            center,
            yaw,
            has_heading: !cfg.rules.classes_without_heading.contains(&o.class),
            speed,
            length: l,
            width: w,
            quad: q,
            distance,
            sector: position(&ego_quad(cfg), &q),
            heading_sector: heading_sector(yaw, &b.heading_edges_deg),
            distance_bin: bin(distance, &b.distance_edges_m),
            speed_bin: speed.map(|v| bin(v, &b.speed_edges_mps)),
            mark,
        }
    }
}

impl SceneGraph {
    /// Where node `b` lies relative to node `a` (the box-extent rule along our heading).
    pub fn relation(&self, a: usize, b: usize) -> Pos {
        position(&self.nodes[a].quad, &self.nodes[b].quad)
    }

    /// Every ordered pair's relation (`(a, b, where b lies relative to a)`), for inspection;
    /// the questions call [`SceneGraph::relation`] on the pairs they draw.
    pub fn edges(&self) -> Vec<(usize, usize, Pos)> {
        let n = self.nodes.len();
        (0..n)
            .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
            .map(|(a, b)| (a, b, self.relation(a, b)))
            .collect()
    }

    /// Nodes with a heading.
    pub(crate) fn with_heading(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].has_heading)
            .collect()
    }
}
