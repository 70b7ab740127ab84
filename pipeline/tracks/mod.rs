//! Per-track time series over a scene's keyframes (the ego included), their map-layer
//! membership, and the neighbour search that finds which tracks ever come close.
//!
//! A [`Track`] holds one value per keyframe the object is annotated on: position, yaw, speed,
//! visibility bin and, when the source has a map, the layer each position falls in. STSBench's
//! detectors work on windows of these series ([`crate::stsbench`]).

mod neighbours;

use std::collections::BTreeMap;

pub use neighbours::candidate_pairs;

use crate::geometry::{wrap_pi, yaw_of};
use crate::maplayers::{Layer, MapLayers};
use crate::store::SceneData;

/// The id of the ego's track.
pub(crate) const EGO_ID: &str = "ego";

/// The coarse class STSBench gates its scenarios on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Vehicle,
    Human,
    Other,
}

/// Map-layer membership per keyframe; each is `None` when the map lacks the layer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrackLayers {
    /// The lane polygon the position is in (`None` inside: off every lane).
    pub lane: Option<Vec<Option<usize>>>,
    /// Between keyframe `i` and `i + 1`: the object left its lane through a lateral boundary
    /// into another lane (length `n - 1`).
    pub lane_change: Option<Vec<bool>>,
    pub ped_crossing: Option<Vec<bool>>,
    pub drivable_area: Option<Vec<bool>>,
    pub walkway: Option<Vec<bool>>,
}

impl TrackLayers {
    pub fn has(&self, l: Layer) -> bool {
        match l {
            Layer::Lane => self.lane.is_some() && self.lane_change.is_some(),
            Layer::PedCrossing => self.ped_crossing.is_some(),
            Layer::DrivableArea => self.drivable_area.is_some(),
            Layer::Walkway => self.walkway.is_some(),
        }
    }
}

/// One object's keyframe series, sorted by frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Track {
    pub id: String,
    pub is_ego: bool,
    /// Unified class (`car`, `pedestrian`, …; `ego` for the ego).
    pub class: String,
    pub kind: Kind,
    pub frames: Vec<u32>,
    /// Seconds since the scene's first keyframe.
    pub t: Vec<f64>,
    /// Global x, y (m).
    pub xy: Vec<[f64; 2]>,
    /// Global z of the box centre (m), for projecting into cameras.
    pub z: Vec<f64>,
    /// Global yaw (rad).
    pub yaw: Vec<f64>,
    /// Speed (m/s).
    pub speed: Vec<f64>,
    pub visibility: Vec<Option<u8>>,
    pub layers: TrackLayers,
}

impl Track {
    /// A track from its series (all of the same length, frames ascending); no map layers.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: &str,
        class: &str,
        kind: Kind,
        frames: Vec<u32>,
        t: Vec<f64>,
        xy: Vec<[f64; 2]>,
        yaw: Vec<f64>,
        speed: Vec<f64>,
    ) -> Self {
        let n = frames.len();
        Self {
            id: id.into(),
            is_ego: id == EGO_ID,
            class: class.into(),
            kind,
            z: vec![0.0; n],
            frames,
            t,
            xy,
            yaw,
            speed,
            visibility: vec![None; n],
            layers: TrackLayers::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Where each keyframe's position lies in the map. A lane change between consecutive
    /// keyframes needs both positions in (different) lanes and the move to leave the first
    /// lane through an edge within `lateral_max_rad` of the object's heading; moving into the
    /// next segment of the same lane crosses an end edge and does not count.
    pub fn with_map(mut self, map: &MapLayers, lateral_max_rad: f64) -> Self {
        let pts = &self.xy;
        let at = |l: Layer| -> Option<Vec<bool>> {
            map.layer(l).map(|_| {
                pts.iter()
                    .map(|&p| map.inside(l, p) == Some(true))
                    .collect()
            })
        };
        let lane: Option<Vec<Option<usize>>> = map.lane.as_ref().map(|_| {
            pts.iter()
                .map(|&p| map.polygon_at(Layer::Lane, p).flatten())
                .collect()
        });
        let lane_change = lane.as_ref().map(|ids| {
            (1..ids.len())
                .map(|i| {
                    let consecutive = self.frames[i] == self.frames[i - 1] + 1;
                    match (ids[i - 1], ids[i]) {
                        (Some(a), Some(b)) if a != b && consecutive => {
                            map.leaves_laterally(
                                a,
                                pts[i - 1],
                                pts[i],
                                self.yaw[i - 1],
                                lateral_max_rad,
                            ) == Some(true)
                        }
                        _ => false,
                    }
                })
                .collect()
        });
        self.layers = TrackLayers {
            ped_crossing: at(Layer::PedCrossing),
            drivable_area: at(Layer::DrivableArea),
            walkway: at(Layer::Walkway),
            lane,
            lane_change,
        };
        self
    }

    /// The entries at `idx` (ascending), as a track of its own. A lane change is kept only
    /// between entries that were consecutive here too.
    pub fn gather(&self, idx: &[usize]) -> Self {
        let pick = |v: &[bool]| idx.iter().map(|&i| v[i]).collect::<Vec<_>>();
        let lc = self.layers.lane_change.as_ref().map(|v| {
            idx.windows(2)
                .map(|w| w[1] == w[0] + 1 && v[w[0]])
                .collect()
        });
        Self {
            id: self.id.clone(),
            is_ego: self.is_ego,
            class: self.class.clone(),
            kind: self.kind,
            frames: idx.iter().map(|&i| self.frames[i]).collect(),
            t: idx.iter().map(|&i| self.t[i]).collect(),
            xy: idx.iter().map(|&i| self.xy[i]).collect(),
            z: idx.iter().map(|&i| self.z[i]).collect(),
            yaw: idx.iter().map(|&i| self.yaw[i]).collect(),
            speed: idx.iter().map(|&i| self.speed[i]).collect(),
            visibility: idx.iter().map(|&i| self.visibility[i]).collect(),
            layers: TrackLayers {
                lane: self
                    .layers
                    .lane
                    .as_ref()
                    .map(|v| idx.iter().map(|&i| v[i]).collect()),
                lane_change: lc,
                ped_crossing: self.layers.ped_crossing.as_deref().map(pick),
                drivable_area: self.layers.drivable_area.as_deref().map(pick),
                walkway: self.layers.walkway.as_deref().map(pick),
            },
        }
    }

    /// The index of `frame` in this track.
    pub fn index_of(&self, frame: u32) -> Option<usize> {
        self.frames.binary_search(&frame).ok()
    }
}

/// Speeds from positions: the forward difference over each keyframe interval, and for the last
/// keyframe the quadratic extrapolation of the three before it (STSBench's ego speed).
pub fn speeds_from_positions(t: &[f64], xy: &[[f64; 2]]) -> Vec<f64> {
    let n = xy.len();
    let mut v: Vec<f64> = (0..n.saturating_sub(1))
        .map(|i| {
            let dt = t[i + 1] - t[i];
            let d = (xy[i + 1][0] - xy[i][0]).hypot(xy[i + 1][1] - xy[i][1]);
            if dt > 0.0 {
                d / dt
            } else {
                0.0
            }
        })
        .collect();
    let last = match v.len() {
        0 => 0.0,
        1 | 2 => v[v.len() - 1],
        k => (3.0 * v[k - 1] - 3.0 * v[k - 2] + v[k - 3]).max(0.0),
    };
    if n > 0 {
        v.push(last);
    }
    v
}

/// The ego's track and every object's track of a scene (ego first, then objects by track id).
/// `kind_of` gives the coarse class of a unified class.
pub(crate) fn scene_tracks(scene: &SceneData, kind_of: &dyn Fn(&str) -> Kind) -> Vec<Track> {
    let t0 = scene.frames.first().map(|f| f.timestamp_us).unwrap_or(0);
    let secs = |us: i64| (us - t0) as f64 * 1e-6;
    let mut frames: Vec<_> = scene.frames.iter().collect();
    frames.sort_by_key(|f| f.frame_idx);
    let t: Vec<f64> = frames.iter().map(|f| secs(f.timestamp_us)).collect();
    let xy: Vec<[f64; 2]> = frames.iter().map(|f| [f.ego.t[0], f.ego.t[1]]).collect();
    let mut ego = Track::new(
        EGO_ID,
        EGO_ID,
        Kind::Vehicle,
        frames.iter().map(|f| f.frame_idx).collect(),
        t.clone(),
        xy.clone(),
        frames.iter().map(|f| wrap_pi(yaw_of(f.ego.q))).collect(),
        speeds_from_positions(&t, &xy),
    );
    ego.z = frames.iter().map(|f| f.ego.t[2]).collect();
    let mut by_track: BTreeMap<&str, Vec<&crate::store::ObjectRow>> = BTreeMap::new();
    for o in &scene.objects {
        by_track.entry(o.track_id.as_str()).or_default().push(o);
    }
    let mut out = vec![ego];
    for (id, mut rows) in by_track {
        rows.sort_by_key(|o| o.frame_idx);
        rows.dedup_by_key(|o| o.frame_idx);
        let t: Vec<f64> = rows.iter().map(|o| secs(o.timestamp_us)).collect();
        let xy: Vec<[f64; 2]> = rows.iter().map(|o| [o.center[0], o.center[1]]).collect();
        // The annotated velocity where the source has one (nuScenes), else the speed from
        // positions, as for the ego.
        let from_positions = speeds_from_positions(&t, &xy);
        let speed: Vec<f64> = rows
            .iter()
            .zip(&from_positions)
            .map(|(o, &p)| match (o.vx, o.vy) {
                (Some(vx), Some(vy)) if vx.is_finite() && vy.is_finite() => vx.hypot(vy),
                _ => p,
            })
            .collect();
        let class = rows.first().map(|o| o.class.as_str()).unwrap_or("other");
        let mut tr = Track::new(
            id,
            class,
            kind_of(class),
            rows.iter().map(|o| o.frame_idx).collect(),
            t,
            xy,
            rows.iter().map(|o| wrap_pi(o.yaw)).collect(),
            speed,
        );
        tr.z = rows.iter().map(|o| o.center[2]).collect();
        tr.visibility = rows.iter().map(|o| o.visibility_bin).collect();
        out.push(tr);
    }
    out
}
