#![allow(dead_code)]

pub mod build_config;
pub mod built;
pub mod cli;
pub mod gpu;
pub mod nusc_fixture;
pub mod oracle;
pub mod random;
pub mod raster;

use drivegen::config::StageConfig;

/// The 12 edges of a box, by corner index (`Box.corners()` order: the four corners of one end,
/// then the other end's in the same order).
pub const BOX_EDGES: [[usize; 2]; 12] = [
    [0, 1],
    [1, 2],
    [2, 3],
    [3, 0],
    [4, 5],
    [5, 6],
    [6, 7],
    [7, 4],
    [0, 4],
    [1, 5],
    [2, 6],
    [3, 7],
];

/// Every file under `dir`, path relative to it → bytes (empty when `dir` is missing).
pub fn tree(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A synthetic nuScenes dataset (`scenes` scenes of `duration_s`, keyframes only,
/// `width`×`height`) written to `dir/root` and ingested into `dir/store`. Returns (root,
/// version, store).
pub fn synth_store(
    dir: &std::path::Path,
    scenes: usize,
    duration_s: f64,
    (width, height): (u32, u32),
) -> (std::path::PathBuf, String, std::path::PathBuf) {
    let root = dir.join("root");
    let opts = drivegen::synth::SynthOptions {
        scenes,
        duration_s,
        write_sweeps: false,
        image_width: width,
        image_height: height,
        ..Default::default()
    };
    drivegen::synth::write_nuscenes(&root, &opts).unwrap();
    let store = dir.join("store");
    drivegen::ingest::nuscenes::ingest(&drivegen::ingest::nuscenes::IngestOptions {
        root: root.clone(),
        version: opts.version.clone(),
        out: store.clone(),
        taxonomy: drivegen::taxonomy::Taxonomy::load(None).unwrap(),
        rules: Default::default(),
        chunk_scenes: 1,
        links: Default::default(),
    })
    .unwrap();
    (root, opts.version, store)
}
