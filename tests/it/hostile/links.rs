//! Folders under a dataset root linked to another disk: every source format follows them by
//! default and keeps both scenes; `--strict-links` refuses what they lead to, naming the link.

use super::*;

/// Moves `in/<rel>` to `disk/<rel>` beside the dataset and links it back.
fn link_out(t: &Path, rel: &Path) {
    let (inside, disk) = (t.join("in").join(rel), t.join("disk").join(rel));
    std::fs::create_dir_all(disk.parent().unwrap()).unwrap();
    std::fs::rename(&inside, &disk).unwrap();
    std::os::unix::fs::symlink(&disk, &inside).unwrap();
}

/// The first CARLA route's camera folder, relative to `in/`.
fn carla_cameras(t: &Path) -> PathBuf {
    carla_routes(t)[0]
        .join("camera")
        .strip_prefix(t.join("in"))
        .unwrap()
        .to_path_buf()
}

fn strict(source: &str) -> Vec<&'static str> {
    [ingest(source), vec!["--strict-links"]].concat()
}

pub(super) fn link_cases() -> Vec<Case> {
    let out = ["store"];
    vec![
        case(
            "nuscenes samples/ a link to another disk",
            "nuscenes",
            |t| link_out(t, Path::new("samples")),
            &ingest("nuscenes"),
            &out,
            rejects(&[], 2),
        ),
        case(
            "waymo camera_image/ a link to another disk",
            "waymo",
            |t| link_out(t, Path::new("camera_image")),
            &ingest("waymo"),
            &out,
            rejects(&[], 2),
        ),
        case(
            "waymo camera_image/ a link to another disk, strict links",
            "waymo",
            |t| link_out(t, Path::new("camera_image")),
            &strict("waymo"),
            &out,
            fails(&["camera_image", "through the symbolic link", "no scene"]),
        ),
        case(
            "carla camera folder a link to another disk",
            "carla",
            |t| link_out(t, &carla_cameras(t)),
            &ingest("carla"),
            &out,
            rejects(&[], 2),
        ),
        case(
            "carla camera folder a link to another disk, strict links",
            "carla",
            |t| link_out(t, &carla_cameras(t)),
            &strict("carla"),
            &out,
            rejects(&["camera", "through the symbolic link"], 1),
        ),
        case(
            "frenetix scene folder a link to another disk",
            "frenetix",
            |t| link_out(t, Path::new("scene-0001")),
            &ingest("frenetix"),
            &out,
            rejects(&[], 2),
        ),
        case(
            "frenetix scene folder a link to another disk, strict links",
            "frenetix",
            |t| link_out(t, Path::new("scene-0001")),
            &strict("frenetix"),
            &out,
            rejects(&["Default_logs.csv", "through the symbolic link"], 1),
        ),
    ]
}

#[test]
pub(super) fn linked_folders() {
    run_all(link_cases());
}
