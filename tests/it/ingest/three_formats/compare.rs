//! The families compared on a pair: visibility, SIG, MetaVQA and STSBench, each returning how
//! many items it compared.

use super::*;

/// An image key that no source id enters: (scene index, keyframe index, nuScenes channel).
type ImageKey = (usize, u32, String);

#[derive(Debug, Clone)]
struct VisRow {
    annotation_id: String,
    amodal: [f64; 4],
    truncation: f64,
    projected: u32,
    visible: u32,
    fraction: f64,
    modal: Option<[f64; 4]>,
    kept: bool,
}

fn read_visibility(path: &Path, scenes: &[SceneData]) -> BTreeMap<ImageKey, Vec<VisRow>> {
    let index = scene_index(scenes);
    let mut out: BTreeMap<ImageKey, Vec<VisRow>> = BTreeMap::new();
    for b in FileReader::try_new(File::open(path).unwrap(), None).unwrap() {
        let b = b.unwrap();
        let col = |n: &str| b.column_by_name(n).unwrap().clone();
        let s = |n: &str| {
            col(n)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone()
        };
        let f = |n: &str| {
            col(n)
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .clone()
        };
        let u = |n: &str| {
            col(n)
                .as_any()
                .downcast_ref::<UInt32Array>()
                .unwrap()
                .clone()
        };
        let (sid, cam, ann) = (s("scene_id"), s("camera"), s("annotation_id"));
        let (fi, pp, vp) = (u("frame_idx"), u("projected_pixels"), u("visible_pixels"));
        let (tr, fr) = (f("truncation"), f("visible_fraction"));
        let am = ["x0", "y0", "x1", "y1"].map(|c| f(&format!("amodal_{c}")));
        let mo = ["x0", "y0", "x1", "y1"].map(|c| f(&format!("modal_{c}")));
        let kept = col("kept")
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap()
            .clone();
        for i in 0..b.num_rows() {
            let key = (
                index[sid.value(i)],
                fi.value(i),
                canonical_camera(cam.value(i)),
            );
            out.entry(key).or_default().push(VisRow {
                annotation_id: ann.value(i).to_string(),
                amodal: am.each_ref().map(|a| a.value(i)),
                truncation: tr.value(i),
                projected: pp.value(i),
                visible: vp.value(i),
                fraction: fr.value(i),
                modal: mo[0].is_valid(i).then(|| mo.each_ref().map(|a| a.value(i))),
                kept: kept.value(i),
            });
        }
    }
    out
}

/// The box centre of every annotation of a side, by (scene index, annotation id).
fn centres(scenes: &[SceneData]) -> BTreeMap<(usize, String), [f64; 3]> {
    scenes
        .iter()
        .enumerate()
        .flat_map(|(k, s)| {
            s.objects
                .iter()
                .map(move |o| ((k, o.annotation_id.clone()), o.center))
        })
        .collect()
}

fn same_centre(a: [f64; 3], b: [f64; 3]) -> bool {
    (0..3).all(|k| (a[k] - b[k]).abs() < 1e-9)
}

pub(super) fn compare_visibility(p: &Pair, st: &Staged) -> usize {
    let n = read_visibility(&st.nus.1, &p.nus);
    let x = read_visibility(&st.other.1, &p.other);
    assert_eq!(
        n.keys().collect::<Vec<_>>(),
        x.keys().collect::<Vec<_>>(),
        "{}: images with projected boxes",
        p.name
    );
    let (cn, cx) = (centres(&p.nus), centres(&p.other));
    let mut compared = 0;
    let mut visible = 0;
    for (key, rows) in &n {
        let others = &x[key];
        assert_eq!(rows.len(), others.len(), "{}: rows of {key:?}", p.name);
        for r in rows {
            let c = cn[&(key.0, r.annotation_id.clone())];
            let o = others
                .iter()
                .find(|o| same_centre(c, cx[&(key.0, o.annotation_id.clone())]))
                .unwrap_or_else(|| panic!("{}: {key:?} {} unmatched", p.name, r.annotation_id));
            let what = format!("{}: {key:?} object at {c:?}", p.name);
            assert_eq!(
                (r.projected, r.visible, r.modal, r.kept),
                (o.projected, o.visible, o.modal, o.kept),
                "{what}"
            );
            assert_eq!(r.fraction.to_bits(), o.fraction.to_bits(), "{what}");
            assert!((r.truncation - o.truncation).abs() < 1e-9, "{what}");
            assert!(
                (0..4).all(|k| (r.amodal[k] - o.amodal[k]).abs() < 1e-6),
                "{what}: amodal {:?} vs {:?}",
                r.amodal,
                o.amodal
            );
            compared += 1;
            visible += usize::from(r.visible > 0 && r.kept);
        }
    }
    assert!(visible > 50, "{}: only {visible} kept visible rows", p.name);
    compared
}

pub(super) fn compare_sig(p: &Pair, st: &Staged) -> usize {
    let mut cfg = SigConfig::load(None).unwrap();
    cfg.objects.min_box_area_px *= AREA_SCALE;
    let read = |(store, vis): &(PathBuf, PathBuf), scenes: &[SceneData], side: &str| {
        let out = vis.with_extension(format!("sig_{side}"));
        drivegen::sig::run(&drivegen::sig::Options {
            store: store.clone(),
            visibility: vis.clone(),
            out: out.clone(),
            config: cfg.clone(),
            seed: 1,
        })
        .unwrap();
        let index = scene_index(scenes);
        let mut m: BTreeMap<ImageKey, (String, String, String)> = BTreeMap::new();
        let file = File::open(out.join(drivegen::sig::FRAMES_FILE)).unwrap();
        for b in FileReader::try_new(file, None).unwrap() {
            let b = b.unwrap();
            let s = |n: &str| {
                b.column_by_name(n)
                    .unwrap()
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .unwrap()
                    .clone()
            };
            let fi = b
                .column_by_name("frame_idx")
                .unwrap()
                .as_any()
                .downcast_ref::<UInt32Array>()
                .unwrap()
                .clone();
            let (sid, cam, sig, rel, objs) = (
                s("scene_id"),
                s("camera"),
                s("sig_json"),
                s("relations_json"),
                s("objects_json"),
            );
            for i in 0..b.num_rows() {
                m.insert(
                    (
                        index[sid.value(i)],
                        fi.value(i),
                        canonical_camera(cam.value(i)),
                    ),
                    (
                        sig.value(i).to_string(),
                        rel.value(i).to_string(),
                        objs.value(i).to_string(),
                    ),
                );
            }
        }
        m
    };
    let n = read(&st.nus, &p.nus, "nuscenes");
    let x = read(&st.other, &p.other, p.name);
    assert_eq!(
        n.keys().collect::<Vec<_>>(),
        x.keys().collect::<Vec<_>>(),
        "{}: SIG images",
        p.name
    );
    // A cell is a floor of the position over the cell size: an object standing on a grid
    // line (the synthetic world parks cars on a lattice, e.g. exactly 10 m behind a camera)
    // falls on either side by round-off, so an image with one is a tie, compared on its
    // positions only.
    let g = &cfg.grid;
    let on_line = |o: &serde_json::Value| {
        let lat = (o["lateral_m"].as_f64().unwrap() - g.lateral_min_m)
            / ((g.lateral_max_m - g.lateral_min_m) / f64::from(g.columns));
        let fwd = o["forward_m"].as_f64().unwrap() / (g.forward_max_m / f64::from(g.rows));
        (lat - lat.round()).abs() < 1e-6 || (fwd - fwd.round()).abs() < 1e-6
    };
    let mut ties = 0;
    for (key, v) in &n {
        let w = &x[key];
        let (a, b): (Vec<serde_json::Value>, Vec<serde_json::Value>) = (
            serde_json::from_str(&v.2).unwrap(),
            serde_json::from_str(&w.2).unwrap(),
        );
        assert_eq!(a.len(), b.len(), "{}: SIG vehicles of {key:?}", p.name);
        for (oa, ob) in a.iter().zip(&b) {
            for c in ["lateral_m", "forward_m", "u"] {
                let (ca, cb) = (oa[c].as_f64().unwrap(), ob[c].as_f64().unwrap());
                assert!(
                    (ca - cb).abs() < 1e-6,
                    "{}: {c} in {key:?}: {ca} vs {cb}",
                    p.name
                );
            }
        }
        if a.iter().chain(&b).any(on_line) {
            ties += 1;
            continue;
        }
        assert_eq!(
            (&v.0, &v.1),
            (&w.0, &w.1),
            "{}: SIG of {key:?}; objects {} vs {}",
            p.name,
            v.2,
            w.2
        );
    }
    eprintln!(
        "{}: {ties} SIG images with a vehicle on a grid line",
        p.name
    );
    assert!(
        ties * 10 < n.len(),
        "{}: {ties} tied SIG images of {}",
        p.name,
        n.len()
    );
    let vehicles = n.values().filter(|(s, _, _)| s.contains('[')).count();
    assert!(vehicles > 10, "{}: {vehicles} images with vehicles", p.name);
    n.len()
}

/// Every question type MetaVQA draws on every image, with a seed per image key.
fn metavqa_questions(
    (_, vis): &(PathBuf, PathBuf),
    scenes: &[SceneData],
) -> BTreeMap<ImageKey, Vec<String>> {
    let cfg = MetavqaConfig::default_config().unwrap();
    let ro = Rollouts::new(&cfg);
    let mut kept = KeptScenes::open(vis, None).unwrap();
    let mut out = BTreeMap::new();
    for (k, scene) in scenes.iter().enumerate() {
        let rows = scene_kept(&mut kept, &scene.scene.scene_id).unwrap();
        for mut g in scene_graphs(scene, &rows, &cfg, vis).unwrap() {
            // Rank the nodes by position, and let no source id or name enter the draws.
            g.nodes.sort_by(|a, b| {
                a.center[0]
                    .total_cmp(&b.center[0])
                    .then(a.center[1].total_cmp(&b.center[1]))
            });
            for (r, node) in g.nodes.iter_mut().enumerate() {
                node.track_id = format!("t{r}");
                node.annotation_id = format!("a{r}");
                node.mark.track_id = node.track_id.clone();
                node.mark.annotation_id = node.annotation_id.clone();
            }
            let key = (k, g.frame_idx, canonical_camera(&g.camera));
            g.source = "synthetic".into();
            g.scene_id = format!("scene{k}");
            g.camera = key.2.clone();
            g.camera_frame_id = format!("{k}/{}/{}", key.1, key.2);
            let seed = 0x5EED ^ ((k as u64) << 40) ^ (u64::from(key.1) << 20) ^ key.2.len() as u64;
            let (drafts, _) = generate(&g, &cfg, &ro, seed);
            let label = |i: usize| i as u32;
            let qs = drafts
                .iter()
                .map(|d| {
                    let options: Vec<String> =
                        d.options.iter().map(|o| render(o, &label)).collect();
                    format!(
                        "{} {} | {} | {} | {}",
                        d.qtype.name(),
                        d.variant,
                        render(&d.stem, &label),
                        options.join(" / "),
                        d.correct
                    )
                })
                .collect();
            out.insert(key, qs);
        }
    }
    out
}

pub(super) fn compare_metavqa(p: &Pair, st: &Staged) -> usize {
    let n = metavqa_questions(&st.nus, &p.nus);
    let x = metavqa_questions(&st.other, &p.other);
    assert_eq!(
        n.keys().collect::<Vec<_>>(),
        x.keys().collect::<Vec<_>>(),
        "{}: MetaVQA images",
        p.name
    );
    for (key, qs) in &n {
        assert_eq!(qs, &x[key], "{}: MetaVQA questions of {key:?}", p.name);
    }
    n.values().map(Vec::len).sum()
}

/// What STSBench mines on one side: the scenario instances as text keyed by position, the
/// windows evaluated, the map skips, and the candidate pairs as (scene, actor key, other key)
/// with each pair's closest approach and windows.
struct Mined {
    instances: Vec<(String, String, Option<String>, usize)>,
    windows: u64,
    skipped: BTreeMap<String, u64>,
    pairs: BTreeMap<(usize, String, String), (f64, u64)>,
}

/// A track named by what it is and where it starts (1e-6 m), not by its source id.
fn track_key(t: &drivegen::tracks::Track) -> String {
    format!("{}@({:.6}, {:.6})", t.class, t.xy[0][0], t.xy[0][1])
}

fn sts_mine(scenes: &[SceneData]) -> Mined {
    let cfg = StsConfig::load(None).unwrap();
    let mut out = Mined {
        instances: Vec::new(),
        windows: 0,
        skipped: BTreeMap::new(),
        pairs: BTreeMap::new(),
    };
    for (k, scene) in scenes.iter().enumerate() {
        let tracks = tracks_with_map(&cfg, scene, &MapLayers::none());
        for (i, j) in candidate_pairs(&tracks, cfg.pair_radius()) {
            let (a, b) = (&tracks[i], &tracks[j]);
            let common: Vec<u32> = a
                .frames
                .iter()
                .copied()
                .filter(|f| b.frames.contains(f))
                .collect();
            let closest = common
                .iter()
                .map(|f| {
                    let (p, q) = (a.xy[a.index_of(*f).unwrap()], b.xy[b.index_of(*f).unwrap()]);
                    (p[0] - q[0]).hypot(p[1] - q[1])
                })
                .fold(f64::INFINITY, f64::min);
            // Agent pairs are mined both ways round, the ego with an agent once.
            let ways = if i == 0 { 1 } else { 2 };
            let windows = ways * window_starts(&common, cfg.window.frames).len() as u64;
            let (ka, kb) = (track_key(a), track_key(b));
            let key = if ka < kb { (k, ka, kb) } else { (k, kb, ka) };
            out.pairs.insert(key, (closest, windows));
        }
        let m = mine_scene(&cfg, &tracks);
        out.windows += m.windows;
        for (s, v) in m.skipped_no_map {
            *out.skipped.entry(s).or_default() += v;
        }
        for i in &m.instances {
            let text = format!(
                "{k} {:?} {} frames {:?} negatives {:?} mean ({:.6}, {:.6})",
                i.role,
                i.scenario.name(),
                i.frames,
                i.negatives,
                i.mean_ego_xy[0],
                i.mean_ego_xy[1]
            );
            let actor = track_key(&tracks[i.actor]);
            let other = i.other.map(|o| track_key(&tracks[o]));
            out.instances.push((text, actor, other, k));
        }
    }
    out
}

/// STSBench on both sides. Candidate pairs are the tracks that come within the pair radius
/// (a strict test): a pair whose closest approach is the radius itself to 1e-6 m is a tie
/// that round-off decides (the synthetic world parks some objects exactly that far apart),
/// so such pairs, and only they, may differ; their windows and scenarios are left out.
pub(super) fn compare_stsbench(p: &Pair) -> usize {
    let radius = StsConfig::load(None).unwrap().pair_radius();
    let (mut n, mut x) = (sts_mine(&p.nus), sts_mine(&p.other));
    let mut ties = Vec::new();
    for (side, a, b) in [("nuScenes", &n, &x), (p.name, &x, &n)] {
        for (key, (closest, _)) in &a.pairs {
            if !b.pairs.contains_key(key) {
                assert!(
                    (closest - radius).abs() < 1e-6,
                    "{}: only {side} pairs {key:?}, {closest} m apart (radius {radius})",
                    p.name
                );
                ties.push(key.clone());
            }
        }
    }
    for m in [&mut n, &mut x] {
        for t in &ties {
            if let Some((_, w)) = m.pairs.get(t) {
                m.windows -= w;
            }
        }
        let tied = |i: &(String, String, Option<String>, usize)| {
            i.2.as_ref().is_some_and(|o| {
                let (a, b) = if &i.1 < o { (&i.1, o) } else { (o, &i.1) };
                ties.contains(&(i.3, a.clone(), b.clone()))
            })
        };
        m.instances.retain(|i| !tied(i));
        m.instances.sort();
    }
    eprintln!("{}: STSBench pairs tied at the radius: {ties:?}", p.name);
    assert!(ties.len() <= 3, "{}: {} tied pairs", p.name, ties.len());
    assert_eq!(n.windows, x.windows, "{}: STSBench windows", p.name);
    assert_eq!(
        n.skipped, x.skipped,
        "{}: STSBench scenarios skipped without a map",
        p.name
    );
    assert_eq!(n.instances, x.instances, "{}: STSBench scenarios", p.name);
    n.instances.len()
}
