#![allow(dead_code)]
pub mod build_config;
pub mod cli;
pub mod gpu;
pub mod nusc_fixture;
pub mod oracle;
pub mod random;
pub mod raster;

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
