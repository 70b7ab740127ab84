//! Reads the nuScenes map expansion JSON (`maps/expansion/<location>.json`, format 1.3): the
//! `node` and `polygon` tables and the four polygon layers. Only what the layers reference is
//! resolved; other tables (lines, arcs, connectors) are ignored.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use super::{MapLayers, Polygon};
use crate::{Error, Result};

#[derive(Deserialize)]
struct Node {
    token: String,
    x: f64,
    y: f64,
}

#[derive(Deserialize)]
struct Hole {
    node_tokens: Vec<String>,
}

#[derive(Deserialize)]
struct RawPolygon {
    token: String,
    exterior_node_tokens: Vec<String>,
    #[serde(default)]
    holes: Vec<Hole>,
}

#[derive(Deserialize)]
struct SinglePolygon {
    token: String,
    polygon_token: String,
}

#[derive(Deserialize)]
struct MultiPolygon {
    token: String,
    polygon_tokens: Vec<String>,
}

#[derive(Deserialize)]
struct Expansion {
    #[serde(default)]
    node: Vec<Node>,
    #[serde(default)]
    polygon: Vec<RawPolygon>,
    lane: Option<Vec<SinglePolygon>>,
    ped_crossing: Option<Vec<SinglePolygon>>,
    walkway: Option<Vec<SinglePolygon>>,
    drivable_area: Option<Vec<MultiPolygon>>,
}

/// An exterior ring and its holes.
type Rings = (Vec<[f64; 2]>, Vec<Vec<[f64; 2]>>);

/// Reads one expansion file.
pub fn read_expansion(path: &Path) -> Result<MapLayers> {
    let text = crate::store::input::read(path, crate::store::input::TABLE)?;
    let raw: Expansion = serde_json::from_slice(crate::store::input::without_bom(&text))
        .map_err(|e| Error::json(path, e))?;
    let nodes: HashMap<&str, [f64; 2]> = raw
        .node
        .iter()
        .map(|n| (n.token.as_str(), [n.x, n.y]))
        .collect();
    let ring = |tokens: &[String], owner: &str| -> Result<Vec<[f64; 2]>> {
        tokens
            .iter()
            .map(|t| {
                nodes.get(t.as_str()).copied().ok_or_else(|| {
                    Error::input(
                        path,
                        format!("polygon {owner}"),
                        format!("unknown node {t}"),
                    )
                })
            })
            .collect()
    };
    let mut polys: HashMap<&str, Rings> = HashMap::new();
    for p in &raw.polygon {
        let ext = ring(&p.exterior_node_tokens, &p.token)?;
        if ext.len() < 3 {
            return Err(Error::input(
                path,
                format!("polygon {}", p.token),
                format!("exterior has {} nodes, at least 3 needed", ext.len()),
            ));
        }
        let holes = p
            .holes
            .iter()
            .map(|h| ring(&h.node_tokens, &p.token))
            .collect::<Result<Vec<_>>>()?;
        polys.insert(p.token.as_str(), (ext, holes));
    }
    let resolve = |layer: &str, token: &str, poly: &str| -> Result<Polygon> {
        let (ext, holes) = polys.get(poly).ok_or_else(|| {
            Error::input(
                path,
                format!("{layer} {token}"),
                format!("unknown polygon {poly}"),
            )
        })?;
        Ok(Polygon::new(token.to_string(), ext.clone(), holes.clone()))
    };
    let single = |layer: &str, recs: &Option<Vec<SinglePolygon>>| -> Result<Option<Vec<Polygon>>> {
        recs.as_ref()
            .map(|v| {
                v.iter()
                    .map(|r| resolve(layer, &r.token, &r.polygon_token))
                    .collect()
            })
            .transpose()
    };
    let drivable = raw
        .drivable_area
        .as_ref()
        .map(|v| {
            v.iter()
                .flat_map(|r| {
                    r.polygon_tokens
                        .iter()
                        .map(|p| resolve("drivable_area", &r.token, p))
                })
                .collect::<Result<Vec<_>>>()
        })
        .transpose()?;
    Ok(MapLayers {
        file: Some(path.to_path_buf()),
        lane: single("lane", &raw.lane)?,
        ped_crossing: single("ped_crossing", &raw.ped_crossing)?,
        walkway: single("walkway", &raw.walkway)?,
        drivable_area: drivable,
    })
}
