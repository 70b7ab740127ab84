//! Set-of-Mark: the exact distance transform and its argmax (GPU kernels `som_edt_cols`,
//! `som_edt_rows`, `som_anchor` against their CPU twins and against a brute-force EDT written
//! here from the definition), and hand-computed anchors.
//!
//! GPU tests need an adapter (lavapipe is enough); `DRIVEGEN_GPU_TESTS=no` skips them. Random
//! inputs are seeded from the clock; `DRIVEGEN_TEST_SEED` replays a printed seed.

use crate::common;

use std::collections::HashMap;

use common::gpu::gpu;
use common::random::{seed, Rng};
use drivegen::config::StageConfig;
use drivegen::som::config::DrawConfig;
use drivegen::som::draw::{draw_cpu, draw_gpu, pack, DrawMark, BLACK};
use drivegen::som::font::{mark_colour, DIGITS};
use drivegen::som::layout::{label_size, layout, MarkIn};
use drivegen::som::SomConfig;
use drivegen::visibility::anchor::{
    argmax_cpu, choose_anchor, edt_cpu, edt_gpu, interior_anchors_cpu, interior_anchors_gpu,
    ring_anchor, Anchor, AnchorRule, EdtParams,
};
use drivegen::visibility::raster::EMPTY;

/// A random ID map: overlapping rectangles and discs of ids `0..objects + 2` (the last two
/// out of range, so they must count as empty), painted in random order over [`EMPTY`], with
/// some salt-and-pepper noise so that runs of one pixel occur.
fn random_map(rng: &mut Rng, w: u32, h: u32, objects: u32) -> Vec<u32> {
    let mut ids = vec![EMPTY; (w * h) as usize];
    let shapes = 1 + rng.below(3 * objects.max(1) + 2);
    for _ in 0..shapes {
        let id = if rng.chance(0.1) {
            EMPTY
        } else {
            rng.below(objects + 2)
        };
        let (cx, cy) = (rng.below(w) as i64, rng.below(h) as i64);
        let (rx, ry) = (
            1 + rng.below(w / 2 + 1) as i64,
            1 + rng.below(h / 2 + 1) as i64,
        );
        let disc = rng.chance(0.4);
        for j in 0..h as i64 {
            for i in 0..w as i64 {
                let (dx, dy) = (i - cx, j - cy);
                let inside = if disc {
                    dx * dx * ry * ry + dy * dy * rx * rx <= rx * rx * ry * ry
                } else {
                    dx.abs() <= rx && dy.abs() <= ry
                };
                if inside {
                    ids[(j * w as i64 + i) as usize] = id;
                }
            }
        }
    }
    if rng.chance(0.5) {
        for _ in 0..(w * h / 20) {
            let k = rng.below(w * h) as usize;
            ids[k] = rng.below(objects + 1);
        }
    }
    ids
}

/// The definition, literally: for a pixel of object `o` (outside the border band), the squared
/// distance to the nearest lattice point not in `o`'s mask: another pixel of the image not
/// labelled `o`, or the nearest point outside the image (straight out through the nearest
/// side).
fn brute_edt(w: u32, h: u32, border: u32, objects: u32, ids: &[u32]) -> Vec<u32> {
    let label = |i: u32, j: u32| {
        let id = ids[(j * w + i) as usize];
        let inside = i >= border && j >= border && i + border < w && j + border < h;
        (inside && id < objects).then_some(id)
    };
    let mut d2 = vec![0u32; (w * h) as usize];
    for j in 0..h {
        for i in 0..w {
            let Some(l) = label(i, j) else { continue };
            let out = (i + 1).min(w - i).min(j + 1).min(h - j);
            let mut best = out * out;
            for jj in 0..h {
                for ii in 0..w {
                    if label(ii, jj) != Some(l) {
                        let (dx, dy) = (ii.abs_diff(i), jj.abs_diff(j));
                        best = best.min(dx * dx + dy * dy);
                    }
                }
            }
            d2[(j * w + i) as usize] = best;
        }
    }
    d2
}

/// The argmax from the definition: largest d², then smallest row, then smallest column.
fn brute_argmax(w: u32, objects: u32, labels: &[Option<u32>], d2: &[u32]) -> Vec<Option<Anchor>> {
    let mut best: Vec<Option<Anchor>> = vec![None; objects as usize];
    for (k, l) in labels.iter().enumerate() {
        if let Some(l) = *l {
            let cand = Anchor {
                x: k as u32 % w,
                y: k as u32 / w,
                dist2: d2[k],
            };
            let slot = &mut best[l as usize];
            let better = match slot {
                None => true,
                Some(a) => {
                    (cand.dist2, std::cmp::Reverse(k))
                        > (a.dist2, std::cmp::Reverse((a.y * w + a.x) as usize))
                }
            };
            if better {
                *slot = Some(cand);
            }
        }
    }
    best
}

fn labels_of(w: u32, h: u32, border: u32, objects: u32, ids: &[u32]) -> Vec<Option<u32>> {
    (0..w * h)
        .map(|k| {
            let (i, j) = (k % w, k / w);
            let inside = i >= border && j >= border && i + border < w && j + border < h;
            let id = ids[k as usize];
            (inside && id < objects).then_some(id)
        })
        .collect()
}

#[test]
fn edt_cpu_and_gpu_equal_brute_force_on_random_maps() {
    let s = seed();
    let mut rng = Rng(s);
    let gpu = gpu();
    for case in 0..60 {
        let w = 1 + rng.below(if case % 3 == 0 { 8 } else { 48 });
        let h = 1 + rng.below(if case % 3 == 1 { 8 } else { 40 });
        let objects = rng.below(7);
        let border = if rng.chance(0.5) { 0 } else { rng.below(6) };
        let ids = random_map(&mut rng, w, h, objects);
        let p = EdtParams::new(w, h, border, objects).unwrap();
        let what = format!("case {case}: {w}×{h}, border {border}, {objects} objects, seed {s}");
        let want = brute_edt(w, h, border, objects, &ids);
        let cpu = edt_cpu(&p, &ids).unwrap();
        assert_eq!(cpu, want, "CPU EDT vs brute force, {what}");
        let labels = labels_of(w, h, border, objects, &ids);
        let want_anchors = brute_argmax(w, objects, &labels, &want);
        assert_eq!(
            argmax_cpu(&p, &ids, &cpu),
            want_anchors,
            "CPU argmax vs brute force, {what}"
        );
        assert_eq!(
            interior_anchors_cpu(&p, &ids).unwrap(),
            want_anchors,
            "CPU anchors (per-object boxes) vs brute force, {what}"
        );
        if let Some(gpu) = gpu {
            assert_eq!(
                edt_gpu(gpu, &p, &ids).unwrap(),
                cpu,
                "GPU EDT vs CPU, {what}"
            );
            assert_eq!(
                interior_anchors_gpu(gpu, &p, &ids).unwrap(),
                want_anchors,
                "GPU anchors vs brute force, {what}"
            );
        }
    }
}

#[test]
fn edt_gpu_equals_cpu_on_full_size_maps() {
    let Some(gpu) = gpu() else { return };
    let s = seed();
    let mut rng = Rng(s);
    for (w, h) in [(1600, 900), (401 + rng.below(300), 1 + rng.below(700))] {
        let objects = 1 + rng.below(40);
        let ids = random_map(&mut rng, w, h, objects);
        let p = EdtParams::new(w, h, 4, objects).unwrap();
        let what = format!("{w}×{h}, {objects} objects, seed {s}");
        let cpu = edt_cpu(&p, &ids).unwrap();
        assert_eq!(
            edt_gpu(gpu, &p, &ids).unwrap(),
            cpu,
            "GPU EDT vs CPU, {what}"
        );
        assert_eq!(
            interior_anchors_gpu(gpu, &p, &ids).unwrap(),
            interior_anchors_cpu(&p, &ids).unwrap(),
            "GPU anchors vs CPU, {what}"
        );
    }
}

fn paint(ids: &mut [u32], w: u32, id: u32, [x0, y0, x1, y1]: [u32; 4]) {
    for j in y0..y1 {
        for i in x0..x1 {
            ids[(j * w + i) as usize] = id;
        }
    }
}

#[test]
fn hand_computed_interior_anchors() {
    let (w, h) = (120, 80);
    let mut ids = vec![EMPTY; (w * h) as usize];
    // A 21×21 square: the centre (20, 15) is 11 px from every side.
    paint(&mut ids, w, 0, [10, 5, 31, 26]);
    // A 21×11 rectangle: d = 6 along the middle row (j = 50) for i = 45..=55; the raster tie
    // rule picks the leftmost.
    paint(&mut ids, w, 1, [40, 45, 61, 56]);
    // An object reaching into the 4-px border band: the band is outside its mask, so what
    // remains is columns 4..12, rows 60..76, bounded by column 3, column 12, row 59, row 76.
    paint(&mut ids, w, 2, [0, 60, 12, 80]);
    // Entirely inside the band: no interior anchor.
    paint(&mut ids, w, 3, [117, 0, 120, 80]);
    let p = EdtParams::new(w, h, 4, 4).unwrap();
    let want = vec![
        Some(Anchor {
            x: 20,
            y: 15,
            dist2: 121,
        }),
        Some(Anchor {
            x: 45,
            y: 50,
            dist2: 36,
        }),
        // d = 4 is first reached at (7, 63): 4 from column 3 and from row 59.
        Some(Anchor {
            x: 7,
            y: 63,
            dist2: 16,
        }),
        None,
    ];
    assert_eq!(interior_anchors_cpu(&p, &ids).unwrap(), want);
    if let Some(gpu) = gpu() {
        assert_eq!(interior_anchors_gpu(gpu, &p, &ids).unwrap(), want);
    }
}

#[test]
fn hand_computed_ring_anchor() {
    // Box [100, 50)..[130, 70) in a 400×225 image, 20-px ring: the ring spans [80, 30)..
    // [150, 90). In the top band alone d ≤ 10 (rows 30..=49 between row 29 and the box), but in
    // the top-left corner square the nearest non-ring points are column 79, row 29 and the
    // box's corner pixel (100, 50): at (91, 41) that is min(12², 12², 9² + 9²) = 144, and no
    // pixel reaches 145 (it would need i ≥ 92 and j ≥ 42, where the box corner is ≤ 8² + 8²
    // away). Row 41 is the first row with 144, and column 91 its first pixel.
    let a = ring_anchor(400, 225, 4, 20, [100, 50, 130, 70]).unwrap();
    assert_eq!(
        a,
        Anchor {
            x: 91,
            y: 41,
            dist2: 144
        }
    );
    // Against the image's top edge: rows 0..4 are border band, the ring starts at row 4 and
    // the top band is 6 rows thick; the corner squares win again, now limited by the band.
    let b = ring_anchor(400, 225, 4, 20, [100, 10, 130, 30]).unwrap();
    let brute = {
        let (w, h) = (400u32, 225u32);
        let mut ids = vec![EMPTY; (w * h) as usize];
        paint(&mut ids, w, 0, [80, 0, 150, 50]);
        paint(&mut ids, w, EMPTY, [100, 10, 130, 30]);
        brute_edt_window(w, h, 4, &ids, [70, 0, 160, 60])
    };
    assert_eq!(b, brute);
    // Nothing of the ring inside the image: none.
    assert_eq!(ring_anchor(50, 50, 4, 2, [0, 0, 50, 50]), None);
}

/// The brute-force anchor of object 0 restricted to a window that contains its mask and a
/// margin (so every nearest non-mask point is inside it or outside the image).
fn brute_edt_window(w: u32, h: u32, border: u32, ids: &[u32], win: [u32; 4]) -> Anchor {
    let [x0, y0, x1, y1] = win;
    let (ww, wh) = (x1 - x0, y1 - y0);
    let mut sub = vec![EMPTY; (ww * wh) as usize];
    for j in 0..wh {
        for i in 0..ww {
            let (x, y) = (x0 + i, y0 + j);
            let inside = x >= border && y >= border && x + border < w && y + border < h;
            if inside {
                sub[(j * ww + i) as usize] = ids[(y * w + x) as usize];
            }
        }
    }
    // The window's own edges are image edges only where they coincide; elsewhere the margin
    // of EMPTY pixels is at least as near as the window's outside.
    let d2 = brute_edt(ww, wh, 0, 1, &sub);
    let labels = labels_of(ww, wh, 0, 1, &sub);
    let a = brute_argmax(ww, 1, &labels, &d2)[0].unwrap();
    Anchor {
        x: a.x + x0,
        y: a.y + y0,
        ..a
    }
}

#[test]
fn choose_anchor_prefers_the_ring_for_small_objects() {
    let cfg = SomConfig::default_config().unwrap().anchor;
    let inner = Anchor {
        x: 110,
        y: 60,
        dist2: 25,
    };
    let interior = Some(inner);
    let bbox = [100, 50, 130, 70];
    let small = choose_anchor(interior, 600, bbox, 400, 225, &cfg);
    assert_eq!(small.rule, AnchorRule::Ring);
    assert_eq!((small.anchor.x, small.anchor.y), (91, 41));
    let big = choose_anchor(interior, 1600, bbox, 400, 225, &cfg);
    assert_eq!(big.rule, AnchorRule::Interior);
    assert_eq!(big.anchor, inner);
    // The box fills the image: no ring, no interior → the clamped top-left corner.
    let none = choose_anchor(None, 10, [0, 0, 400, 225], 400, 225, &cfg);
    assert_eq!(none.rule, AnchorRule::Fallback);
    assert_eq!((none.anchor.x, none.anchor.y), (4, 4));
}

#[test]
fn layout_never_overlaps_or_covers_an_anchor_on_random_scenes() {
    let s = seed();
    let mut rng = Rng(s);
    let cfg = SomConfig::default_config().unwrap();
    for case in 0..200 {
        // Few or no search rings make the grid search (the last resort) do the work too.
        let mut lay = cfg.layout.clone();
        lay.search_rings = [0, 1, 3, 40][rng.below(4) as usize];
        lay.search_step_px = 2 + rng.below(7);
        let w = 60 + rng.below(1541);
        let h = 40 + rng.below(861);
        // At most a quarter of the image in labels, so a free place always exists.
        let cap = (w * h / (4 * 34 * 26)).min(120);
        let n = rng.below(cap + 1);
        // Anchors in a few clusters, so that preferred places collide.
        let clusters: Vec<[u32; 2]> = (0..1 + rng.below(4))
            .map(|_| [rng.below(w), rng.below(h)])
            .collect();
        let marks: Vec<MarkIn> = (0..n)
            .map(|_| {
                let c = clusters[rng.below(clusters.len() as u32) as usize];
                let spread = 1 + rng.below(80);
                let jitter = |v: u32, max: u32, rng: &mut Rng| {
                    (i64::from(v) + i64::from(rng.below(2 * spread)) - i64::from(spread))
                        .clamp(0, i64::from(max) - 1) as u32
                };
                MarkIn {
                    anchor: [jitter(c[0], w, &mut rng), jitter(c[1], h, &mut rng)],
                    visible_pixels: rng.below(20_000),
                }
            })
            .collect();
        let what = format!("case {case}: {w}×{h}, {n} marks, {lay:?}, seed {s}");
        let labels = layout(w, h, &marks, &cfg.draw, &lay).unwrap();
        assert_eq!(labels.len(), marks.len(), "{what}");
        for (k, l) in labels.iter().enumerate() {
            assert_eq!(l.mark, k as u32 + 1, "{what}");
            assert!(!l.overlaps, "{what}: mark {} found no free place", l.mark);
            let [x0, y0, x1, y1] = l.rect;
            assert!(x0 < x1 && x1 <= w && y0 < y1 && y1 <= h, "{what}: {l:?}");
            assert_eq!([x1 - x0, y1 - y0], label_size(l.mark, &cfg.draw), "{what}");
            for (o, m) in marks.iter().enumerate() {
                if o != k {
                    let [ax, ay] = m.anchor;
                    assert!(
                        !(x0 <= ax && ax < x1 && y0 <= ay && ay < y1),
                        "{what}: label {} covers the anchor of mark {}",
                        l.mark,
                        o + 1
                    );
                }
            }
            for q in &labels[..k] {
                let [a0, b0, a1, b1] = q.rect;
                assert!(
                    x1 <= a0 || a1 <= x0 || y1 <= b0 || b1 <= y0,
                    "{what}: labels {} and {} overlap",
                    q.mark,
                    l.mark
                );
            }
        }
        assert_eq!(
            layout(w, h, &marks, &cfg.draw, &lay).unwrap(),
            labels,
            "{what}: not deterministic"
        );
    }
}

#[test]
fn layout_keeps_free_labels_at_their_anchor_and_moves_up_first() {
    let cfg = SomConfig::default_config().unwrap();
    // Two labels whose preferred places collide: the one with fewer visible pixels (mark 2)
    // keeps its place; mark 1 moves by one search step at a time, upwards first.
    let marks = [
        MarkIn {
            anchor: [200, 100],
            visible_pixels: 9000,
        },
        MarkIn {
            anchor: [205, 104],
            visible_pixels: 3000,
        },
    ];
    let l = layout(400, 225, &marks, &cfg.draw, &cfg.layout).unwrap();
    // Mark 2: bottom-left pixel (205, 104), 18 × 26.
    assert_eq!(l[1].rect, [205, 79, 223, 105]);
    // Mark 1 prefers [200, 75, 218, 101), which overlaps mark 2. Ring k moves it 4k px:
    // it clears mark 2 sideways once its right edge 218 − 4k ≤ 205 (leftward, k ≥ 4), upwards
    // once its bottom 101 − 4k ≤ 79 (k ≥ 6), rightwards once 200 + 4k ≥ 223 (k ≥ 6),
    // downwards once 75 + 4k ≥ 105 (k ≥ 8). So ring 4; of its directions (up, up-right,
    // right, down-right, down, down-left, …) down-left is the first free one: bottom-left pixel
    // (184, 116).
    assert_eq!(l[0].rect, [184, 91, 202, 117]);
}

fn random_draw_config(rng: &mut Rng) -> DrawConfig {
    let mut d = SomConfig::default_config().unwrap().draw;
    d.box_thickness_px = 1 + rng.below(4);
    d.glyph_scale = 1 + rng.below(3);
    d.label_padding_px = rng.below(4);
    d
}

#[test]
fn draw_gpu_equals_cpu_on_random_images() {
    let Some(gpu) = gpu() else { return };
    let s = seed();
    let mut rng = Rng(s);
    for case in 0..25 {
        let (w, h) = if case == 0 {
            (1600, 900)
        } else {
            (120 + rng.below(500), 60 + rng.below(400))
        };
        let draw = random_draw_config(&mut rng);
        let image: Vec<u32> = (0..w * h).map(|_| rng.next_u64() as u32).collect();
        let n = rng.below(30);
        let marks: Vec<DrawMark> = (1..=n)
            .map(|k| {
                let number = if rng.chance(0.2) {
                    rng.below(10_000)
                } else {
                    k
                };
                let [lw, lh] = label_size(number, &draw);
                let (x0, y0) = (rng.below(w), rng.below(h));
                let bbox = if rng.chance(0.1) {
                    [x0, y0, x0, y0]
                } else {
                    [
                        x0,
                        y0,
                        (x0 + 1 + rng.below(w / 2)).min(w),
                        (y0 + 1 + rng.below(h / 2)).min(h),
                    ]
                };
                let (lx, ly) = (rng.below(w - lw + 1), rng.below(h - lh + 1));
                DrawMark::new(bbox, [lx, ly, lx + lw, ly + lh], number, rng.below(1 << 24))
            })
            .collect();
        let what = format!("case {case}: {w}×{h}, {n} marks, {draw:?}, seed {s}");
        let mut cpu = image.clone();
        draw_cpu(&mut cpu, w, h, &marks, &draw).unwrap();
        let mut gpu_img = image.clone();
        draw_gpu(gpu, &mut gpu_img, w, h, &marks, &draw).unwrap();
        let diff = cpu.iter().zip(&gpu_img).position(|(a, b)| a != b);
        assert_eq!(
            diff, None,
            "GPU vs CPU first differ at pixel {diff:?}, {what}"
        );
        if n > 0 {
            assert_ne!(cpu, image, "{what}: nothing drawn");
        }
    }
}

/// Reads the number back from a drawn label, knowing only the font and the label geometry:
/// every font pixel must be a uniform `s × s` block of either the colour or black, the margins
/// and gaps black, and each digit cell must equal exactly one glyph.
fn read_label(img: &[u32], w: u32, rect: [u32; 4], colour: u32, draw: &DrawConfig) -> String {
    let (s, p) = (draw.glyph_scale, draw.label_padding_px);
    let px = |i: u32, j: u32| img[(j * w + i) as usize];
    let [x0, y0, x1, y1] = rect;
    let k = (x1 - x0 - 2 * p + s) / (8 * s);
    let mut text = String::new();
    for t in 0..k {
        let cell_x = x0 + p + t * 8 * s;
        let mut rows = [0u32; 11];
        for (cy, row) in rows.iter_mut().enumerate() {
            for cx in 0..7 {
                let (bx, by) = (cell_x + cx * s, y0 + p + cy as u32 * s);
                let v = px(bx, by);
                for dy in 0..s {
                    for dx in 0..s {
                        assert_eq!(
                            px(bx + dx, by + dy),
                            v,
                            "a font pixel is not a uniform block"
                        );
                    }
                }
                assert!(v == colour || v == BLACK, "unexpected colour {v:08x}");
                *row = (*row << 1) | u32::from(v == colour);
            }
        }
        let matches: Vec<usize> = (0..10).filter(|&d| DIGITS[d] == rows).collect();
        assert_eq!(
            matches.len(),
            1,
            "digit cell {t} of {rect:?} reads as {matches:?}"
        );
        text.push(char::from(b'0' + matches[0] as u8));
    }
    // Everything in the rectangle outside the digit cells is black.
    for j in y0..y1 {
        for i in x0..x1 {
            let (gx, gy) = (i as i64 - (x0 + p) as i64, j as i64 - (y0 + p) as i64);
            let in_cell = gx >= 0
                && gy >= 0
                && (gx as u32) < k * 8 * s
                && (gx as u32 % (8 * s)) < 7 * s
                && (gy as u32) < 11 * s;
            if !in_cell {
                assert_eq!(px(i, j), BLACK, "margin pixel ({i}, {j}) of {rect:?}");
            }
        }
    }
    text
}

#[test]
fn drawn_labels_are_legible() {
    let s = seed();
    let mut rng = Rng(s);
    let cfg = SomConfig::default_config().unwrap();
    let (w, h) = (1600, 900);
    for draw in [cfg.draw.clone(), random_draw_config(&mut rng)] {
        let n = 40 + rng.below(80);
        let marks: Vec<MarkIn> = (0..n)
            .map(|_| MarkIn {
                anchor: [rng.below(w), rng.below(h)],
                visible_pixels: rng.below(10_000),
            })
            .collect();
        let labels = layout(w, h, &marks, &draw, &cfg.layout).unwrap();
        let draws: Vec<DrawMark> = labels
            .iter()
            .zip(&marks)
            .map(|(l, m)| {
                let [ax, ay] = m.anchor;
                let bbox = [
                    ax.saturating_sub(30),
                    ay.saturating_sub(20),
                    (ax + 30).min(w),
                    (ay + 20).min(h),
                ];
                DrawMark::new(bbox, l.rect, l.mark, mark_colour(l.mark))
            })
            .collect();
        // A mid-grey photo stand-in, so that black and the colours are both distinguishable.
        let mut img = vec![pack([128, 128, 128, 255]); (w * h) as usize];
        draw_cpu(&mut img, w, h, &draws, &draw).unwrap();
        if let Some(gpu) = gpu() {
            let mut g = vec![pack([128, 128, 128, 255]); (w * h) as usize];
            draw_gpu(gpu, &mut g, w, h, &draws, &draw).unwrap();
            assert!(g == img, "GPU vs CPU");
        }
        for d in &draws {
            assert_eq!(
                read_label(&img, w, d.label, d.colour, &draw),
                d.number.to_string(),
                "{draw:?}"
            );
        }
    }
}

#[test]
fn box_outlines_are_two_pixels_inside_the_box() {
    let draw = SomConfig::default_config().unwrap().draw;
    let (w, h) = (40u32, 30u32);
    let mut img = vec![0u32; (w * h) as usize];
    let m = DrawMark::new([5, 4, 20, 14], [30, 0, 30, 0], 3, 0x123456);
    draw_cpu(&mut img, w, h, &[m], &draw).unwrap();
    let c = pack([0x12, 0x34, 0x56, 255]);
    for j in 0..h {
        for i in 0..w {
            let inside = (5..20).contains(&i) && (4..14).contains(&j);
            let ring = inside && !((7..18).contains(&i) && (6..12).contains(&j));
            assert_eq!(img[(j * w + i) as usize] == c, ring, "({i}, {j})");
        }
    }
}

fn drivegen(args: &[&std::ffi::OsStr]) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_drivegen"))
        .env("DRIVEGEN_PROGRESS", "0")
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "drivegen {args:?} failed ({:?}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The columns of an Arrow IPC file by name, every batch concatenated, as strings / numbers.
fn read_table(path: &std::path::Path) -> HashMap<String, Vec<String>> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(path).unwrap(), None).unwrap();
    let mut cols: HashMap<String, Vec<String>> = HashMap::new();
    for batch in reader {
        let batch = batch.unwrap();
        for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
            let fmt = ArrayFormatter::try_new(c.as_ref(), &FormatOptions::default()).unwrap();
            let v = cols.entry(f.name().clone()).or_default();
            for i in 0..c.len() {
                v.push(fmt.value(i).to_string());
            }
        }
    }
    cols
}

#[test]
fn cli_marks_a_tiny_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let p = |s: &str| dir.path().join(s);
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    let (src, store, vis) = (p("src"), p("store"), p("vis.arrow"));
    drivegen(&[
        os("synth"),
        os("--out"),
        src.as_os_str(),
        os("--scenes"),
        os("1"),
        os("--duration"),
        os("3"),
        os("--no-sweeps"),
        os("--width"),
        os("400"),
        os("--height"),
        os("225"),
    ]);
    drivegen(&[
        os("ingest"),
        os("--source"),
        os("nuscenes"),
        os("--root"),
        src.as_os_str(),
        os("--out"),
        store.as_os_str(),
    ]);
    drivegen(&[
        os("visibility"),
        os("--device"),
        os("cpu"),
        os("--store"),
        store.as_os_str(),
        os("--out"),
        vis.as_os_str(),
    ]);
    let som = |out: &std::path::Path, device: &'static str| {
        drivegen(&[
            os("som"),
            os("--device"),
            os(device),
            os("--store"),
            store.as_os_str(),
            os("--visibility"),
            vis.as_os_str(),
            os("--out"),
            out.as_os_str(),
        ])
    };
    let out = p("som");
    let said = som(&out, "cpu");
    assert!(said.contains("marked images"), "{said}");
    let marks = read_table(&out.join("marks.arrow"));
    let v = read_table(&vis);
    let n = marks["mark"].len();
    assert!(n >= 5, "only {n} marks");
    // Every kept visibility row is marked, once, with the anchor the visibility table gives it
    // (same rules: the built-in [anchor] section, modal box).
    let kept: Vec<usize> = (0..v["kept"].len())
        .filter(|&i| v["kept"][i] == "true")
        .collect();
    assert_eq!(kept.len(), n);
    for (r, &i) in kept.iter().enumerate() {
        assert_eq!(marks["annotation_id"][r], v["annotation_id"][i]);
        assert_eq!(marks["camera_frame_id"][r], v["camera_frame_id"][i]);
        assert_eq!(marks["anchor_x"][r], v["anchor_x"][i], "row {r}");
        assert_eq!(marks["anchor_y"][r], v["anchor_y"][i], "row {r}");
    }
    let draw = SomConfig::default_config().unwrap().draw;
    let u = |c: &str, r: usize| -> u32 { marks[c][r].parse().unwrap() };
    let mut by_image: HashMap<String, Vec<usize>> = HashMap::new();
    for (r, id) in marks["camera_frame_id"].iter().enumerate() {
        by_image.entry(id.clone()).or_default().push(r);
    }
    for (image, rows) in &by_image {
        let png = out
            .join(&marks["scene_id"][rows[0]])
            .join(format!("{image}.png"));
        let img = image::open(&png).unwrap();
        assert_eq!(img.color(), image::ColorType::Rgb8, "{png:?}");
        let img = img.to_rgb8();
        let (w, h) = img.dimensions();
        assert_eq!((w, h), (400, 225));
        let px: Vec<u32> = img
            .pixels()
            .map(|q| pack([q.0[0], q.0[1], q.0[2], 255]))
            .collect();
        for (k, &r) in rows.iter().enumerate() {
            // Marks are numbered 1..=n per image in table order.
            assert_eq!(u("mark", r), k as u32 + 1, "{png:?}");
            let label = [
                u("label_x0", r),
                u("label_y0", r),
                u("label_x1", r),
                u("label_y1", r),
            ];
            assert!(label[2] <= w && label[3] <= h);
            let rgb = u("colour", r);
            assert_eq!(rgb, mark_colour(k as u32 + 1));
            // The number can be read back from the written PNG.
            let colour = pack([(rgb >> 16) as u8, (rgb >> 8) as u8, rgb as u8, 255]);
            assert_eq!(
                read_label(&px, w, label, colour, &draw),
                (k + 1).to_string(),
                "{png:?}"
            );
            for &q in rows {
                if q == r {
                    continue;
                }
                let (ax, ay) = (
                    marks["anchor_x"][q].parse::<f64>().unwrap() - 0.5,
                    marks["anchor_y"][q].parse::<f64>().unwrap() - 0.5,
                );
                let (ax, ay) = (ax as u32, ay as u32);
                assert!(
                    !(label[0] <= ax && ax < label[2] && label[1] <= ay && ay < label[3]),
                    "{png:?}: label {} covers anchor of {}",
                    k + 1,
                    u("mark", q)
                );
                let o = [
                    u("label_x0", q),
                    u("label_y0", q),
                    u("label_x1", q),
                    u("label_y1", q),
                ];
                assert!(
                    label[2] <= o[0] || o[2] <= label[0] || label[3] <= o[1] || o[3] <= label[1],
                    "{png:?}: labels overlap"
                );
            }
        }
    }
    let pngs: usize = std::fs::read_dir(out.join(&marks["scene_id"][0]))
        .unwrap()
        .count();
    assert_eq!(pngs, by_image.len());
    // The GPU path writes the same bytes.
    if gpu().is_some() {
        let out_gpu = p("som_gpu");
        som(&out_gpu, "gpu");
        assert_eq!(
            std::fs::read(out.join("marks.arrow")).unwrap(),
            std::fs::read(out_gpu.join("marks.arrow")).unwrap()
        );
        for image in by_image.keys() {
            let f = std::path::Path::new(&marks["scene_id"][0]).join(format!("{image}.png"));
            assert!(
                std::fs::read(out.join(&f)).unwrap() == std::fs::read(out_gpu.join(&f)).unwrap(),
                "{f:?} differs between CPU and GPU"
            );
        }
    }
    // The written schema is the published one.
    let reader = arrow::ipc::reader::FileReader::try_new(
        std::fs::File::open(out.join("marks.arrow")).unwrap(),
        None,
    )
    .unwrap();
    assert_eq!(reader.schema(), drivegen::som::stage::marks_schema());
    // With `box = "amodal"` the boxes are the projected boxes clamped to the image, pixel edges
    // rounded outwards; with the default they are the modal boxes of the visibility table.
    for (r, &i) in kept.iter().enumerate() {
        for (c, m) in ["x0", "y0", "x1", "y1"]
            .iter()
            .zip(["modal_x0", "modal_y0", "modal_x1", "modal_y1"])
        {
            let want: f64 = v[m][i].parse().unwrap();
            assert_eq!(f64::from(u(&format!("box_{c}"), r)), want, "row {r}");
        }
    }
    let cfg_path = p("amodal.toml");
    std::fs::write(
        &cfg_path,
        drivegen::som::config::DEFAULT_TOML.replace("box = \"modal\"", "box = \"amodal\""),
    )
    .unwrap();
    let out_amodal = p("som_amodal");
    drivegen(&[
        os("som"),
        os("--device"),
        os("cpu"),
        os("--config"),
        cfg_path.as_os_str(),
        os("--store"),
        store.as_os_str(),
        os("--visibility"),
        vis.as_os_str(),
        os("--out"),
        out_amodal.as_os_str(),
    ]);
    let am = read_table(&out_amodal.join("marks.arrow"));
    for (r, &i) in kept.iter().enumerate() {
        let f = |c: &str| -> f64 { v[c][i].parse().unwrap() };
        let want = [
            f("amodal_x0").floor().clamp(0.0, 400.0),
            f("amodal_y0").floor().clamp(0.0, 225.0),
            f("amodal_x1").ceil().clamp(0.0, 400.0),
            f("amodal_y1").ceil().clamp(0.0, 225.0),
        ];
        for (c, want) in ["x0", "y0", "x1", "y1"].iter().zip(want) {
            let got: f64 = am[&format!("box_{c}")][r].parse().unwrap();
            assert_eq!(got, want, "row {r} box_{c}");
        }
    }
    // An unknown scene is a usage error naming it.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_drivegen"))
        .args(["som", "--device", "cpu", "--scene", "nope", "--store"])
        .arg(&store)
        .arg("--visibility")
        .arg(&vis)
        .arg("--out")
        .arg(p("x"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nope"));
}
