//! The synthetic road layout as nuScenes map-expansion polygons
//! (`maps/expansion/<location>.json`): `lane` (one polygon per lane and 20 m segment, none inside
//! junctions), `ped_crossing` (the crosswalks the junction pedestrians use), `walkway` (the
//! sidewalks) and `drivable_area` (each road kerb to kerb), so that STSBench's map scenarios
//! (lane change, crossing, jaywalking, walking, waiting for a pedestrian) can be mined from the
//! synthetic corpus. Only polygon layers are written; lines, connectors and arcs are not.

use std::path::Path;

use serde_json::{json, Value};

use super::tokens::token;
use super::world::{Road, SceneWorld, PLACES};
use crate::store::atomic::write_atomic;
use crate::Result;

/// Length of one lane segment (m): lanes change id along the road, as nuScenes lanes do.
pub(crate) const LANE_SEGMENT_M: f64 = 20.0;
/// Crosswalk extent along the road relative to where the first pedestrian starts (m); the
/// pedestrians of a crosswalk start 0.8 m apart (see `world/cast/street.rs`, junctions).
pub(crate) const CROSSWALK_BEFORE_M: f64 = 1.0;
pub(crate) const CROSSWALK_AFTER_M: f64 = 2.4;
/// Where a crosswalk starts beyond the cross road's kerb (m), as the pedestrians are placed.
pub(crate) const CROSSWALK_OFFSET_M: f64 = 2.0;

/// Collects nodes and polygons.
struct Builder {
    seed: u64,
    nodes: Vec<Value>,
    polygons: Vec<Value>,
}

impl Builder {
    /// A quadrilateral of road `r` over s ∈ [s0, s1], d ∈ [d0, d1]; returns its polygon token.
    fn quad(&mut self, name: &str, r: &Road, s: [f64; 2], d: [f64; 2]) -> String {
        let corners = [(s[0], d[0]), (s[1], d[0]), (s[1], d[1]), (s[0], d[1])];
        let mut ids = Vec::new();
        for (k, (si, di)) in corners.iter().enumerate() {
            let p = r.point(*si, *di);
            let t = token(self.seed, &format!("map/node/{name}/{k}"));
            self.nodes.push(json!({"token": t, "x": p[0], "y": p[1]}));
            ids.push(t);
        }
        let t = token(self.seed, &format!("map/polygon/{name}"));
        self.polygons
            .push(json!({"token": t, "exterior_node_tokens": ids, "holes": []}));
        t
    }
}

/// Arc-length intervals of `r` that lie inside the carriageway of its neighbouring roads.
fn junction_cuts(roads: &[Road], i: usize, widen: impl Fn(&Road) -> f64) -> Vec<(f64, f64, f64)> {
    let r = &roads[i];
    let mut cuts = Vec::new();
    for j in [i.wrapping_sub(1), i + 1] {
        let Some(o) = roads.get(j) else { continue };
        let (da, db) = (r.dir(), o.dir());
        let det = da[0] * (-db[1]) - da[1] * (-db[0]);
        if det.abs() < 1e-9 {
            continue;
        }
        let (rx, ry) = (o.origin[0] - r.origin[0], o.origin[1] - r.origin[1]);
        let s = (rx * (-db[1]) - ry * (-db[0])) / det;
        cuts.push((s - widen(o), s + widen(o), s));
    }
    cuts
}

/// `[lo, hi]` minus the cuts, as sorted intervals.
fn subtract(lo: f64, hi: f64, cuts: &[(f64, f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = vec![(lo, hi)];
    for &(a, b, _) in cuts {
        out = out
            .into_iter()
            .flat_map(|(x, y)| {
                if b <= x || a >= y {
                    vec![(x, y)]
                } else {
                    [(x, a.max(x)), (b.min(y), y)]
                        .into_iter()
                        .filter(|(p, q)| q - p > 1e-6)
                        .collect()
                }
            })
            .collect();
    }
    out
}

/// The expansion JSON of the roads of `worlds` at `location`.
pub(crate) fn expansion(seed: u64, worlds: &[&SceneWorld]) -> Value {
    let mut b = Builder {
        seed,
        nodes: Vec::new(),
        polygons: Vec::new(),
    };
    let (mut lanes, mut crossings, mut walkways, mut drivable) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for w in worlds {
        for (ri, r) in w.roads.iter().enumerate() {
            let tag = format!("{}/road{ri}", w.name);
            let kerb_cuts = junction_cuts(&w.roads, ri, Road::kerb_half);
            // Lanes: each lane of each carriageway, cut at junctions, in 20 m segments.
            for forward in [true, false] {
                for lane in 0..r.lanes_each_way {
                    let c = r.lane_d(lane, forward);
                    let d = [c - 0.5 * r.lane_width, c + 0.5 * r.lane_width];
                    for (k, (s0, s1)) in subtract(r.s_min, r.s_max, &kerb_cuts)
                        .into_iter()
                        .enumerate()
                    {
                        let n = ((s1 - s0) / LANE_SEGMENT_M).ceil().max(1.0) as usize;
                        for seg in 0..n {
                            let a = s0 + (s1 - s0) * seg as f64 / n as f64;
                            let z = s0 + (s1 - s0) * (seg + 1) as f64 / n as f64;
                            let name = format!("{tag}/lane/{forward}/{lane}/{k}/{seg}");
                            let poly = b.quad(&name, r, [a, z], d);
                            lanes.push(json!({
                                "token": token(seed, &format!("map/lane/{name}")),
                                "polygon_token": poly,
                                "lane_type": "CAR",
                                "from_edge_line_token": "",
                                "to_edge_line_token": "",
                                "left_lane_divider_segments": [],
                                "right_lane_divider_segments": [],
                            }));
                        }
                    }
                }
            }
            // Sidewalks on both sides, interrupted where they cross a neighbouring road.
            for side in [-1.0, 1.0] {
                let d = if side > 0.0 {
                    [r.kerb_half(), r.half_width()]
                } else {
                    [-r.half_width(), -r.kerb_half()]
                };
                for (k, (s0, s1)) in subtract(r.s_min, r.s_max, &kerb_cuts)
                    .into_iter()
                    .enumerate()
                {
                    let name = format!("{tag}/walkway/{side}/{k}");
                    let poly = b.quad(&name, r, [s0, s1], d);
                    walkways.push(json!({"token": token(seed, &format!("map/walkway/{name}")), "polygon_token": poly}));
                }
            }
            // Crosswalks just outside each neighbouring road's carriageway.
            for (ci, &(_, _, sj)) in kerb_cuts.iter().enumerate() {
                let other_half = kerb_cuts[ci].1 - sj;
                for side in [-1.0, 1.0] {
                    let s_cross = sj + side * (other_half + CROSSWALK_OFFSET_M);
                    let name = format!("{tag}/crossing/{ci}/{side}");
                    let poly = b.quad(
                        &name,
                        r,
                        [s_cross - CROSSWALK_BEFORE_M, s_cross + CROSSWALK_AFTER_M],
                        [-r.kerb_half(), r.kerb_half()],
                    );
                    crossings.push(json!({"token": token(seed, &format!("map/ped_crossing/{name}")), "polygon_token": poly, "road_segment_token": ""}));
                }
            }
            let poly = b.quad(
                &format!("{tag}/drivable"),
                r,
                [r.s_min, r.s_max],
                [-r.kerb_half(), r.kerb_half()],
            );
            drivable.push(poly);
        }
    }
    json!({
        "version": "1.3",
        "node": b.nodes,
        "polygon": b.polygons,
        "lane": lanes,
        "ped_crossing": crossings,
        "walkway": walkways,
        "drivable_area": [{"token": token(seed, "map/drivable_area"), "polygon_tokens": drivable}],
        "line": [],
        "road_segment": [],
        "road_block": [],
        "stop_line": [],
        "carpark_area": [],
        "road_divider": [],
        "lane_divider": [],
        "traffic_light": [],
        "lane_connector": [],
        "arcline_path_3": {},
        "connectivity": {},
    })
}

/// Writes `out/maps/expansion/<location>.json` for every location the worlds use.
pub(crate) fn write_expansions(out: &Path, seed: u64, worlds: &[SceneWorld]) -> Result<()> {
    for place in PLACES {
        let here: Vec<&SceneWorld> = worlds
            .iter()
            .filter(|w| w.place.location == place.location)
            .collect();
        if here.is_empty() {
            continue;
        }
        let text = serde_json::to_string(&expansion(seed, &here)).unwrap_or_default();
        let path = out
            .join("maps")
            .join("expansion")
            .join(format!("{}.json", place.location));
        write_atomic(&path, text.as_bytes())?;
    }
    Ok(())
}
