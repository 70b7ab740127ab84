//! The palette: the sky and ground colours, and one hue per class, spaced so that a pixel's
//! class can be read back from its hue whatever its shading.

use super::super::world::CLASSES;

pub(super) const SKY_ZENITH: [f32; 3] = [62.0, 112.0, 196.0];
pub(super) const SKY_HORIZON: [f32; 3] = [188.0, 206.0, 224.0];
pub(super) const ASPHALT: [f32; 3] = [84.0, 85.0, 90.0];
pub(super) const JUNCTION: [f32; 3] = [90.0, 90.0, 95.0];
pub(super) const WHITE: [f32; 3] = [228.0, 228.0, 224.0];
pub(super) const YELLOW: [f32; 3] = [222.0, 182.0, 48.0];
pub(super) const SIDEWALK: [f32; 3] = [158.0, 156.0, 148.0];
pub(super) const KERB: [f32; 3] = [190.0, 189.0, 183.0];
pub(super) const TERRAIN: [f32; 3] = [98.0, 116.0, 74.0];

/// Hue (degrees) of each unified class, 360/13 apart so that every class is told apart by
/// hue alone, whatever its shading.
const CLASS_HUES: [f64; 13] = [
    0.0,   // car: red
    222.0, // truck: azure
    55.0,  // bus: yellow
    194.0, // trailer: cyan
    166.0, // construction_vehicle: teal
    138.0, // emergency_vehicle: spring green
    305.0, // pedestrian: magenta
    83.0,  // bicycle: lime
    110.0, // motorcycle: green
    28.0,  // traffic_cone: orange
    250.0, // barrier: blue
    277.0, // animal: violet
    332.0, // other: rose
];

/// The hue of class `class` (an index into [`CLASSES`]).
pub fn class_hue(class: usize) -> f64 {
    CLASS_HUES[class.min(CLASS_HUES.len() - 1)]
}

/// The fully lit colour of class `class`.
pub fn class_color(class: usize) -> [u8; 3] {
    let c = hsv(class_hue(class), 0.82, 0.92);
    [c[0] as u8, c[1] as u8, c[2] as u8]
}

/// The class index whose hue is nearest to that of `rgb` (for checks on decoded images).
pub fn nearest_class(rgb: [u8; 3]) -> usize {
    let h = hue_of(rgb);
    (0..CLASSES.len())
        .min_by(|&a, &b| {
            let da = hue_dist(h, class_hue(a));
            let db = hue_dist(h, class_hue(b));
            da.total_cmp(&db)
        })
        .unwrap_or(0)
}

/// Hue in degrees of an RGB colour.
pub fn hue_of(rgb: [u8; 3]) -> f64 {
    let [r, g, b] = rgb.map(|c| f64::from(c) / 255.0);
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let d = max - min;
    if d <= 0.0 {
        return 0.0;
    }
    let h = if max == r {
        ((g - b) / d).rem_euclid(6.0)
    } else if max == g {
        (b - r) / d + 2.0
    } else {
        (r - g) / d + 4.0
    };
    h * 60.0
}

/// Saturation (0..1) of an RGB colour.
pub fn saturation_of(rgb: [u8; 3]) -> f64 {
    let max = f64::from(*rgb.iter().max().unwrap_or(&0));
    let min = f64::from(*rgb.iter().min().unwrap_or(&0));
    if max <= 0.0 {
        0.0
    } else {
        (max - min) / max
    }
}

fn hue_dist(a: f64, b: f64) -> f64 {
    let d = (a - b).rem_euclid(360.0);
    d.min(360.0 - d)
}

pub(super) fn hsv(h: f64, s: f64, v: f64) -> [f32; 3] {
    let c = v * s;
    let hp = h.rem_euclid(360.0) / 60.0;
    let x = c * (1.0 - (hp.rem_euclid(2.0) - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = v - c;
    [
        ((r + m) * 255.0) as f32,
        ((g + m) * 255.0) as f32,
        ((b + m) * 255.0) as f32,
    ]
}

#[inline(always)]
pub(super) fn mix(a: [f32; 3], b: [f32; 3], t: f32) -> [f32; 3] {
    [
        a[0] + (b[0] - a[0]) * t,
        a[1] + (b[1] - a[1]) * t,
        a[2] + (b[2] - a[2]) * t,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hues_are_distinct() {
        for a in 0..13 {
            assert_eq!(nearest_class(class_color(a)), a);
            for b in 0..a {
                assert!(hue_dist(class_hue(a), class_hue(b)) > 25.0);
            }
        }
    }
}
