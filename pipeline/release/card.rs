//! The dataset card: `README.md` with the YAML header Hugging Face `datasets` reads to find
//! the splits, then what the release holds.

use std::fmt::Write as _;

use super::{Options, ReleaseSummary};

pub(crate) fn dataset_card(opts: &Options, s: &ReleaseSummary) -> String {
    let mut c = String::new();
    let _ = writeln!(c, "---");
    let _ = writeln!(c, "configs:");
    // The default config is every family; each family is a config of its own, its files
    // named after it, with the splits that hold its rows (a robustness split re-asks only
    // some families, and `datasets` refuses a split whose files match nothing).
    let splits: Vec<String> = s.split_counts.keys().cloned().collect();
    let splits = order_splits(opts, splits);
    let _ = writeln!(c, "- config_name: default");
    let _ = writeln!(c, "  default: true");
    write_data_files(&mut c, &splits, None);
    for family in s.counts.keys() {
        let _ = writeln!(c, "- config_name: {family}");
        let own: Vec<String> = splits
            .iter()
            .filter(|sp| {
                *sp == &opts.split
                    || s.split_counts
                        .get(*sp)
                        .is_some_and(|f| f.get(family).is_some_and(|n| *n > 0))
            })
            .cloned()
            .collect();
        write_data_files(&mut c, &own, Some(family));
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
    if let Some(r) = &opts.robustness {
        robustness_section(&mut c, opts, r, s);
    }
    let first = s
        .counts
        .keys()
        .next()
        .map_or(crate::qa::Family::Egodyn.name(), String::as_str);
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

/// The splits in the order a reader meets them: the main split, its text-only control, then
/// the robustness splits in the order of their settings.
fn order_splits(opts: &Options, mut splits: Vec<String>) -> Vec<String> {
    let mut order = vec![opts.split.clone(), super::control_split(&opts.split)];
    if let Some(r) = &opts.robustness {
        order.extend(
            r.settings
                .iter()
                .map(|s| crate::robustness::split_name(&opts.split, s)),
        );
    }
    splits.sort_by_key(|s| {
        (
            order.iter().position(|o| o == s).unwrap_or(usize::MAX),
            s.clone(),
        )
    });
    splits
}

/// What the robustness splits are, how they were drawn and how to score them.
fn robustness_section(
    c: &mut String,
    opts: &Options,
    r: &crate::robustness::RobustnessOptions,
    s: &ReleaseSummary,
) {
    let _ = writeln!(
        c,
        "## Corruption robustness

As in DriveBench, the same questions are asked again with          their images corrupted: up to {} questions of each of {} (a draw with seed {},          stratified over question type and answer) are repeated word for word in every split          below, with the same options and the same correct letter. A repeated row has its own          `qa_id`; `base_qa_id` names the row of `{}` it repeats and `setting` the split's          setting (`clean` and `text_only` in the main split and its control). Images are          corrupted from the source camera image with drivegen's DriveBench corruptions          (`corruption`, `severity`, `corruption_seed`); on a Set-of-Mark image the marks are          drawn after the corruption. Camera Crash and Frame Lost black out some views of a          frame, so some of their rows show no usable image: their key is kept, as in          DriveBench, and `drivegen score` reports them apart.
",
        r.rows,
        r.families.join(", "),
        r.seed,
        opts.split
    );
    let _ = writeln!(
        c,
        "| split | corruption | severity | rows |
|---|---|---:|---:|"
    );
    for st in &r.settings {
        let split = crate::robustness::split_name(&opts.split, st);
        let n: usize = s.split_counts.get(&split).map_or(0, |f| f.values().sum());
        let _ = writeln!(
            c,
            "| `{split}` | {} | {} | {n} |",
            st.corruption.display_name(),
            st.severity
        );
    }
    let _ = writeln!(
        c,
        "
`drivegen score RELEASE PREDICTIONS` reports per family and question type the clean          accuracy on the repeated rows, each setting's accuracy, relative robustness (setting ÷          clean) and its mean over the corruptions (mRR), and visual reliance (clean −          text-only), with bootstrap 95 % intervals.
"
    );
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
pub(crate) fn config_glob(split: &str, family: Option<&str>) -> String {
    match family {
        Some(f) => format!("data/{split}-{f}-*"),
        None => format!("data/{split}-*"),
    }
}
