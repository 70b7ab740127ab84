//! Label layout on random crowded scenes, and the drawn marks: GPU equal to CPU, labels legible
//! when read back, box outlines where they belong.

use super::*;

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
pub(super) fn read_label(
    img: &[u32],
    w: u32,
    rect: [u32; 4],
    colour: u32,
    draw: &DrawConfig,
) -> String {
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
