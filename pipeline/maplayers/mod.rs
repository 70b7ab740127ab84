//! The four polygon layers of the nuScenes map expansion that STSBench mines with (`lane`,
//! `ped_crossing`, `drivable_area`, `walkway`), read from `maps/expansion/<location>.json`, and
//! the point queries on them.
//!
//! A source without a map, or a map without one of the layers, yields `None` for that layer:
//! the miner then skips the scenarios that need it instead of guessing.

mod polygon;
mod reader;

use std::path::{Path, PathBuf};

pub use polygon::{point_in_ring, segment_hit, Polygon};
pub use reader::read_expansion;

/// One location's map: each layer is `None` when the map does not have it.
#[derive(Debug, Clone, Default)]
pub struct MapLayers {
    /// Where the layers were read from (for messages).
    pub file: Option<PathBuf>,
    pub lane: Option<Vec<Polygon>>,
    pub ped_crossing: Option<Vec<Polygon>>,
    pub drivable_area: Option<Vec<Polygon>>,
    pub walkway: Option<Vec<Polygon>>,
}

/// The layer a query is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    Lane,
    PedCrossing,
    DrivableArea,
    Walkway,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Lane => "lane",
            Layer::PedCrossing => "ped_crossing",
            Layer::DrivableArea => "drivable_area",
            Layer::Walkway => "walkway",
        }
    }
}

impl MapLayers {
    /// No map at all.
    pub fn none() -> Self {
        Self::default()
    }

    pub fn layer(&self, l: Layer) -> Option<&[Polygon]> {
        match l {
            Layer::Lane => self.lane.as_deref(),
            Layer::PedCrossing => self.ped_crossing.as_deref(),
            Layer::DrivableArea => self.drivable_area.as_deref(),
            Layer::Walkway => self.walkway.as_deref(),
        }
    }

    pub fn has(&self, l: Layer) -> bool {
        self.layer(l).is_some()
    }

    /// The index of the first polygon of `l` containing `p`: `None` when the layer is missing,
    /// `Some(None)` when no polygon contains the point.
    pub(crate) fn polygon_at(&self, l: Layer, p: [f64; 2]) -> Option<Option<usize>> {
        self.layer(l)
            .map(|polys| polys.iter().position(|poly| poly.contains(p)))
    }

    /// Whether `p` is inside any polygon of `l` (`None` when the layer is missing).
    pub fn inside(&self, l: Layer, p: [f64; 2]) -> Option<bool> {
        self.polygon_at(l, p).map(|i| i.is_some())
    }

    /// Whether moving from `p0` (in lane polygon `lane`) to `p1` crosses a lateral lane
    /// boundary: an edge within `max_angle_rad` of the direction of travel `heading`. The move
    /// is followed through the lanes it passes: leaving a lane through an end edge (into the
    /// lane's successor) is no change, but the walk continues in the lane entered, so a lane
    /// change in the same step as a segment change is still found. `None` when the segment
    /// leaves no lane.
    pub(crate) fn leaves_laterally(
        &self,
        lane: usize,
        p0: [f64; 2],
        p1: [f64; 2],
        heading: f64,
        max_angle_rad: f64,
    ) -> Option<bool> {
        let lanes = self.lane.as_ref()?;
        let (mut cur, mut q) = (lane, p0);
        let mut crossed = false;
        // Each step enters another polygon; the bound only guards against degenerate maps.
        for _ in 0..64 {
            let poly = lanes.get(cur)?;
            let Some((t, edge)) = poly.first_crossing(q, p1).filter(|(t, _)| *t > 1e-9) else {
                return crossed.then_some(false);
            };
            crossed = true;
            let (ex, ey) = (edge[1][0] - edge[0][0], edge[1][1] - edge[0][1]);
            let len = ex.hypot(ey);
            if len > 0.0 {
                // The edge's direction is unsigned: compare |cos| with the heading.
                let cos = ((ex * heading.cos() + ey * heading.sin()) / len).abs();
                if cos >= max_angle_rad.cos() {
                    return Some(true);
                }
            }
            // Step just past the end edge and continue in the lane there.
            let r = [p1[0] - q[0], p1[1] - q[1]];
            let step = (1e-6 / r[0].hypot(r[1]).max(1e-12)).min(1.0 - t);
            q = [q[0] + r[0] * (t + step), q[1] + r[1] * (t + step)];
            match lanes.iter().position(|p| p.contains(q)) {
                Some(next) if next != cur => cur = next,
                _ => return Some(false),
            }
        }
        Some(false)
    }
}

/// The expansion file of `location` under `maps_dir` (`<maps_dir>/<location>.json`).
pub(crate) fn expansion_path(maps_dir: &Path, location: &str) -> PathBuf {
    maps_dir.join(format!("{location}.json"))
}

/// Reads the map of `location` from `maps_dir`, or returns an empty map when the file is not
/// there (a source without a map expansion). A file that exists but is malformed is an error.
pub(crate) fn load_location(maps_dir: &Path, location: &str) -> crate::Result<MapLayers> {
    let path = expansion_path(maps_dir, location);
    if !path.is_file() {
        return Ok(MapLayers::none());
    }
    read_expansion(&path)
}
