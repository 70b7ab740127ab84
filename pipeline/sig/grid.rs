//! The grid and its relations: metric camera-ground positions → cells, and cell offsets →
//! directional and proximal labels.

use super::config::{Binning, Grid};

/// The 8 directional labels (id = index), cyclic.
pub const DIRECTIONAL: [&str; 8] = [
    "at the back of",
    "at the back left of",
    "at the left of",
    "at the front left of",
    "at the front of",
    "at the front right of",
    "at the right of",
    "at the back right of",
];

/// The 5 proximal labels (id = index), linear.
pub const PROXIMAL: [&str; 5] = [
    "adjacent to",
    "close to",
    "at a distance from",
    "far from",
    "far away from",
];

/// The cell `[column, row]` of a point at `lateral` m (right positive) and `forward` m, or
/// `None` outside the grid.
pub fn cell(g: &Grid, lateral: f64, forward: f64) -> Option<[u32; 2]> {
    if !(lateral >= g.lateral_min_m
        && lateral < g.lateral_max_m
        && forward >= 0.0
        && forward < g.forward_max_m)
    {
        return None;
    }
    let fc = (lateral - g.lateral_min_m) / (g.lateral_max_m - g.lateral_min_m);
    let fr = forward / g.forward_max_m;
    let fr = match g.binning {
        Binning::Linear => fr,
        Binning::Sqrt => fr.sqrt(),
    };
    let col = ((fc * f64::from(g.columns)).floor() as u32).min(g.columns - 1);
    let row = ((fr * f64::from(g.rows)).floor() as u32).min(g.rows - 1);
    Some([col, row])
}

/// The camera's own cell: row 0, the column of lateral 0.
pub fn self_cell(g: &Grid) -> [u32; 2] {
    cell(g, 0.0, 0.0).unwrap_or([g.columns / 2, 0])
}

/// The directional label id of a point at offset `(dx, dy)` (columns right, rows forward) from
/// the reference: 45° sectors centred on the axes, 0 = back, 2 = left, 4 = front, 6 = right.
/// `None` for a zero offset.
pub fn directional(dx: f64, dy: f64) -> Option<u8> {
    if dx == 0.0 && dy == 0.0 {
        return None;
    }
    // Bearing measured clockwise (seen from above, forward up) from "back" (0, −1).
    let theta = dy.atan2(dx).to_degrees();
    let from_back = (-90.0 - theta).rem_euclid(360.0);
    Some((((from_back + 22.5) / 45.0).floor() as u32 % 8) as u8)
}

/// The proximal label id of a grid distance.
pub fn proximal(bins: &[f64; 4], distance: f64) -> u8 {
    bins.iter().position(|b| distance < *b).unwrap_or(4) as u8
}

/// Cyclic step distance between two directional ids.
pub(crate) fn directional_steps(a: u8, b: u8) -> u8 {
    let d = (i16::from(a) - i16::from(b)).rem_euclid(8) as u8;
    d.min(8 - d)
}

/// Linear step distance between two proximal ids.
pub(crate) fn proximal_steps(a: u8, b: u8) -> u8 {
    a.abs_diff(b)
}
