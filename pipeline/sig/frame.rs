//! One SIG per kept keyframe camera image: its vehicles on the grid, their keys (type and
//! left-to-right order in the image), the SIG JSON and the relations between all nodes.

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::config::SigConfig;
use super::grid::{cell, directional, proximal, self_cell};

/// A vehicle placed on the grid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SigObject {
    /// `"<colour> <type> <order>"`, or `"<type> <order>"` when the colour is unknown.
    pub key: String,
    pub track_id: String,
    pub class: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub colour: Option<String>,
    /// 1-based rank by image position, left-most first, over all vehicles of the image.
    pub order: u32,
    /// `[column, row]`.
    pub cell: [u32; 2],
    /// Camera-ground position: lateral (right) and forward (m).
    pub lateral_m: f64,
    pub forward_m: f64,
    /// Horizontal image position used for the order (px).
    pub u: f64,
}

/// A directed relation "subject is `<directional>` / `<proximal>` object".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relation {
    pub subject: String,
    pub object: String,
    /// `None` when both share a cell.
    pub directional: Option<u8>,
    pub proximal: u8,
    pub dx: i64,
    pub dy: i64,
    pub distance: f64,
}

/// A vehicle candidate before placement.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub track_id: String,
    pub class: String,
    pub colour: Option<String>,
    pub lateral_m: f64,
    pub forward_m: f64,
    pub u: f64,
}

/// The SIG of one image.
#[derive(Debug, Clone, PartialEq)]
pub struct SigFrame {
    pub self_cell: [u32; 2],
    pub objects: Vec<SigObject>,
    pub relations: Vec<Relation>,
    /// Vehicles of the image outside the grid's extent.
    pub outside: u32,
}

/// The name of the self node in keys and sentences.
pub(crate) const SELF_KEY: &str = "self";

/// Places the vehicles: type from the class map (others dropped), order by `u` (ties by
/// track id), cell from the metric position (outside the extent: counted, left out).
pub fn build(cfg: &SigConfig, cands: &[Candidate]) -> SigFrame {
    let mut typed: Vec<(&Candidate, &str)> = cands
        .iter()
        .filter_map(|c| cfg.objects.types.get(&c.class).map(|t| (c, t.as_str())))
        .collect();
    typed.sort_by(|a, b| {
        a.0.u
            .total_cmp(&b.0.u)
            .then_with(|| a.0.track_id.cmp(&b.0.track_id))
    });
    let mut objects = Vec::new();
    let mut outside = 0;
    for (c, t) in typed {
        let Some(cell) = cell(&cfg.grid, c.lateral_m, c.forward_m) else {
            outside += 1;
            continue;
        };
        let order = objects.len() as u32 + 1;
        let key = match &c.colour {
            Some(col) => format!("{col} {t} {order}"),
            None => format!("{t} {order}"),
        };
        objects.push(SigObject {
            key,
            track_id: c.track_id.clone(),
            class: c.class.clone(),
            kind: t.to_string(),
            colour: c.colour.clone(),
            order,
            cell,
            lateral_m: c.lateral_m,
            forward_m: c.forward_m,
            u: c.u,
        });
    }
    let me = self_cell(&cfg.grid);
    let relations = relations(cfg, me, &objects);
    SigFrame {
        self_cell: me,
        objects,
        relations,
        outside,
    }
}

/// Every ordered pair of distinct nodes (self first, then the vehicles in order).
pub(crate) fn relations(cfg: &SigConfig, me: [u32; 2], objects: &[SigObject]) -> Vec<Relation> {
    let mut nodes: Vec<(&str, [u32; 2])> = vec![(SELF_KEY, me)];
    nodes.extend(objects.iter().map(|o| (o.key.as_str(), o.cell)));
    let mut out = Vec::new();
    for (i, a) in nodes.iter().enumerate() {
        for (j, b) in nodes.iter().enumerate() {
            if i == j {
                continue;
            }
            let dx = i64::from(a.1[0]) - i64::from(b.1[0]);
            let dy = i64::from(a.1[1]) - i64::from(b.1[1]);
            let d = (dx as f64).hypot(dy as f64);
            out.push(Relation {
                subject: a.0.to_string(),
                object: b.0.to_string(),
                directional: directional(dx as f64, dy as f64),
                proximal: proximal(&cfg.relations.proximal_bins, d),
                dx,
                dy,
                distance: d,
            });
        }
    }
    out
}

impl SigFrame {
    /// The SIG JSON of `docs/sigbench.md` §1.2: vehicles, lanes, signs, lights (none from boxes)
    /// and self.
    pub fn sig_json(&self) -> Value {
        let mut v = Map::new();
        for o in &self.objects {
            v.insert(o.key.clone(), json!(o.cell));
        }
        json!({
            "vehicles": v,
            "traffic_lanes": {},
            "traffic_signs": {},
            "traffic_lights": {},
            "self": self.self_cell,
        })
    }
}

/// The grid settings recorded with every frame.
pub(crate) fn grid_json(cfg: &SigConfig) -> Value {
    json!({
        "columns": cfg.grid.columns,
        "rows": cfg.grid.rows,
        "lateral_min_m": cfg.grid.lateral_min_m,
        "lateral_max_m": cfg.grid.lateral_max_m,
        "forward_max_m": cfg.grid.forward_max_m,
        "binning": cfg.grid.binning,
        "frame": "camera ground plane: column = camera x (right), row = camera z (forward)",
        "self": self_cell(&cfg.grid),
        "directional_rule": "8 sectors of 45° centred on the axes of the offset subject − object (columns right, rows forward); 0 back, 2 left, 4 front, 6 right; edges go clockwise from back; zero offset: none",
        "proximal_bins": cfg.relations.proximal_bins,
    })
}
