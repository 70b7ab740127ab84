//! The dataset card: `README.md` with the YAML header Hugging Face `datasets` reads to find
//! the splits, then what the release holds.

use std::fmt::Write as _;

use super::{ReleaseOptions, ReleaseSummary};

pub fn dataset_card(opts: &ReleaseOptions, s: &ReleaseSummary) -> String {
    let mut c = String::new();
    let _ = writeln!(c, "---");
    let _ = writeln!(c, "configs:");
    // The default config is every family; each family is a config of its own, its files
    // named after it.
    let mut splits = vec![opts.split.clone()];
    if opts.text_only_controls {
        splits.push(super::control_split(&opts.split));
    }
    let _ = writeln!(c, "- config_name: default");
    let _ = writeln!(c, "  default: true");
    write_data_files(&mut c, &splits, None);
    for family in s.counts.keys() {
        let _ = writeln!(c, "- config_name: {family}");
        write_data_files(&mut c, &splits, Some(family));
    }
    let _ = writeln!(c, "task_categories:");
    let _ = writeln!(c, "- visual-question-answering");
    let _ = writeln!(c, "tags:");
    let _ = writeln!(c, "- autonomous-driving");
    let _ = writeln!(c, "- drivegen");
    let _ = writeln!(c, "---\n");
    let _ = writeln!(c, "# {}\n", opts.name);
    let _ = writeln!(
        c,
        "Built by drivegen {}: {} questions, {} images ({}), {} shards. Every answer comes from \
         a deterministic rule; its `rule`, `params` and `evidence` columns say which and why.\n",
        env!("CARGO_PKG_VERSION"),
        s.rows,
        s.images,
        match opts.images {
            super::ImageMode::Embed => "embedded",
            super::ImageMode::Paths => "paths only",
        },
        s.shards.len()
    );
    let _ = writeln!(c, "| family | question type | rows |\n|---|---|---:|");
    for (f, types) in &s.counts {
        for (t, n) in types {
            let _ = writeln!(c, "| {f} | {t} | {n} |");
        }
    }
    let _ = writeln!(
        c,
        "\nColumns: the common QA record (`qa_id`, `family`, `question_type`, `question`, \
         `choices`, `answer_index`, `answer_letter`, `answer`, `source`, `scene_id`, \
         `frame_idx`, `clip_id`, `cameras`, `camera_frame_ids`, `objects`, `marks`, \
         `corruption`, `severity`, `rule`, `params`, `evidence`, `seed`), `image_paths` (set when \
         the shown images are not the source's own: corrupted or marked), the question's parts \
         (`prompt_layout`, `prompt_preamble`, `prompt_stem`, `prompt_postamble`, \
         `option_notes`: `question` is rendered from them and `choices`), `image_widths` and \
         `image_heights` (each image's size in the source), `source_files` and \
         `source_frame_ids` (the source dataset's file each image is, or was drawn on, and its \
         key of the image's frame: nuScenes' sample token), `source_version` and \
         `source_scene_id` (the source's version and its key of the scene) and `images`, the shown camera \
         images in `cameras` order. `drivegen validate` checks every row's key against its \
         prompt, every image and this folder's manifest.\n"
    );
    if opts.text_only_controls {
        let _ = writeln!(
            c,
            "The split `{}` repeats every question with black images of the same sizes: the \
             text-only control that measures how much a model answers without looking.\n",
            super::control_split(&opts.split)
        );
    }
    let first = s.counts.keys().next().map_or("egodyn", String::as_str);
    let _ = writeln!(
        c,
        "```python\nfrom datasets import load_dataset\nds = load_dataset(\"path/to/this/folder\")  \
         # every family\none = load_dataset(\"path/to/this/folder\", \"{first}\")  # one family\n```\n"
    );
    let _ = writeln!(
        c,
        "`manifest.json` lists the inputs' sha256, the options and the sha256 of every shard."
    );
    c
}

/// The `data_files` of a config: each split's files, of one family or of all.
fn write_data_files(c: &mut String, splits: &[String], family: Option<&str>) {
    let _ = writeln!(c, "  data_files:");
    for split in splits {
        let _ = writeln!(c, "  - split: {split}");
        let _ = writeln!(c, "    path: {}", config_glob(split, family));
    }
}

/// The files of `split` a config takes: `data/{split}-*`, or `data/{split}-{family}-*`.
pub fn config_glob(split: &str, family: Option<&str>) -> String {
    match family {
        Some(f) => format!("data/{split}-{f}-*"),
        None => format!("data/{split}-*"),
    }
}
