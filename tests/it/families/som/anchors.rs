//! The exact distance transform and its argmax against a brute-force EDT written from the
//! definition, on random maps and full-size ones, and anchors computed by hand.

use super::*;

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
