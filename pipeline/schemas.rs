//! Every table drivegen writes, with the path of its published JSON schema under `schemas/`.
//!
//! `tests/it/release/schemas.rs` checks that each file equals the schema the code writes, so the
//! published schemas can never drift from the data.

use arrow::datatypes::SchemaRef;

use crate::store::schema::Table;

/// `(path under schemas/, table name, schema)` for every table written.
pub fn published() -> Vec<(&'static str, &'static str, SchemaRef)> {
    let mut v: Vec<(&'static str, &'static str, SchemaRef)> = vec![
        ("scene_store/scenes.json", "scenes", Table::Scenes.schema()),
        ("scene_store/frames.json", "frames", Table::Frames.schema()),
        (
            "scene_store/ego_poses.json",
            "ego_poses",
            Table::EgoPoses.schema(),
        ),
        (
            "scene_store/cameras.json",
            "cameras",
            Table::Cameras.schema(),
        ),
        (
            "scene_store/objects.json",
            "objects",
            Table::Objects.schema(),
        ),
        ("qa.json", "qa", crate::qa::qa_schema()),
        (
            "release/shard.json",
            "release shard",
            crate::release::shards::shard_schema(),
        ),
        (
            "corrupt/corruptions.json",
            "corruptions",
            crate::corrupt::output::schema(),
        ),
        (
            "egomotion/clips.json",
            "clips",
            crate::egomotion::output::clips_schema(),
        ),
        (
            "visibility/visibility.json",
            "visibility",
            crate::visibility::output::schema(),
        ),
        ("som/marks.json", "marks", crate::som::stage::marks_schema()),
        (
            "som/marked_images.json",
            "marked_images",
            crate::som::recipe::columns(),
        ),
        (
            "metavqa/metavqa_qa.json",
            "metavqa_qa",
            crate::metavqa::stage::qa_schema(),
        ),
    ];
    // STSBench and SIG.
    v.extend([
        (
            "stsbench/stsbench_qa.json",
            "stsbench_qa",
            crate::stsbench::output::schema(),
        ),
        (
            "sig/sig_frames.json",
            "sig_frames",
            crate::sig::output::frames_schema(),
        ),
        ("sig/sig_qa.json", "sig_qa", crate::sig::output::qa_schema()),
    ]);
    v.extend(crate::synth::waymo::published_schemas());
    v.sort_by_key(|e| e.0);
    v
}
