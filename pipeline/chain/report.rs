//! `report.html`: what a build made and how long it took. Plots are inline SVG (see
//! [`crate::svg`]); images (the corruption contact sheet, a grid of marked images) sit in
//! `report/` next to it. The report holds timings, so unlike the shards and the manifest it is
//! not byte-identical between runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::checkpoint::{StepRecord, StepStatus};
use super::BuildOptions;
use crate::images::ImageReader;
use crate::store::atomic::write_atomic;
use crate::store::CameraRow;
use crate::svg::{esc, grouped_bars, hbars, Series};
use crate::Result;

/// The blind audit the build recorded in the manifest: a table per family and type, and the
/// families' best blind baseline beside chance.
fn blind_section(manifest: &serde_json::Value, html: &mut String) {
    let Ok(a) = serde_json::from_value::<BlindAudit>(manifest["blind_audit"].clone()) else {
        return;
    };
    let _ = write!(
        html,
        "<h2>Blind baselines</h2><p>Accuracy of models that never see an image, fitted on some \
         {} and scored on the others ({} folds), beside chance.</p><table><tr><th>group</th>\
         <th>rows</th><th>chance</th><th>letter prior</th><th>answer prior per template</th>\
         <th>question only</th><th>best − chance</th></tr>",
        match a.grouping.as_str() {
            "clip" => "clips and keyframes of the single scene",
            "none" => "rows (none here: a single clip or keyframe cannot be held out)",
            _ => "scenes",
        },
        a.folds
    );
    let groups = a
        .families
        .iter()
        .map(|(f, b)| (format!("<b>{}</b>", esc(f)), b))
        .chain(a.types.iter().map(|(k, b)| (esc(k), b)));
    for (name, b) in groups {
        let best = b.letter_prior.max(b.template_prior).max(b.question_only);
        let _ = write!(
            html,
            "<tr><td>{name}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td>\
             <td>{:+.3}</td></tr>",
            b.rows,
            b.chance,
            b.letter_prior,
            b.template_prior,
            b.question_only,
            best - b.chance
        );
    }
    html.push_str("</table>");
    let families: Vec<String> = a.families.keys().cloned().collect();
    let series = [
        Series {
            name: "chance",
            colour: "#bbbbbb",
            values: a.families.values().map(|b| b.chance).collect(),
        },
        Series {
            name: "best blind baseline",
            colour: "#d9534f",
            values: a
                .families
                .values()
                .map(|b| b.letter_prior.max(b.template_prior).max(b.question_only))
                .collect(),
        },
    ];
    html.push_str(&grouped_bars(
        "Blind accuracy per family",
        &families,
        &series,
    ));
}

/// What the report reads of the manifest's `blind_audit`.
#[derive(serde::Deserialize)]
struct BlindAudit {
    folds: usize,
    #[serde(default)]
    grouping: String,
    families: BTreeMap<String, BlindRow>,
    types: BTreeMap<String, BlindRow>,
}

#[derive(serde::Deserialize)]
struct BlindRow {
    rows: usize,
    chance: f64,
    letter_prior: f64,
    template_prior: f64,
    question_only: f64,
}

/// What the report shows besides the steps.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inputs {
    /// Set-of-Mark output folders, each with the store it marked.
    pub som: Vec<(PathBuf, PathBuf)>,
}

/// The contact sheet's subject: a store camera image, decoded once (choosing it needs the
/// pixels anyway).
#[derive(Debug, Clone)]
pub(crate) struct SheetSubject {
    /// Where the store's `image_path`s are relative to.
    pub root: PathBuf,
    pub cam: CameraRow,
    pub image: image::RgbImage,
}

impl SheetSubject {
    /// The image's file name (keys the sheet's random draws).
    pub fn name(&self) -> String {
        let rel = ImageReader::file_name(&self.cam);
        Path::new(&rel)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or(rel)
    }

    /// Where the image came from, for the legend.
    pub fn source(&self) -> String {
        let file = self.root.join(&self.cam.image_path);
        if ImageReader::is_parquet_row(&self.cam) {
            format!("{} ({})", file.display(), self.cam.camera_frame_id)
        } else {
            file.display().to_string()
        }
    }
}

/// The first keyframe front-camera image of the stores that decodes (the contact sheet's
/// subject): an unusable image, which the image stages skip and record, is passed over here
/// too.
pub(crate) fn sheet_subject(stores: &[PathBuf]) -> Result<Option<SheetSubject>> {
    for s in stores {
        let store = crate::store::Store::open(s)?;
        let root = crate::store::subset::absolute_source_root(&store);
        let cams: Vec<CameraRow> = store.read_all(crate::store::Table::Cameras)?;
        // nuScenes and CARLA call it CAM_FRONT, Waymo FRONT.
        let mut front: Vec<&CameraRow> = cams
            .iter()
            .filter(|c| c.is_keyframe && (c.camera == "CAM_FRONT" || c.camera == "FRONT"))
            .collect();
        front.sort_by(|a, b| (&a.scene_id, a.frame_idx).cmp(&(&b.scene_id, b.frame_idx)));
        let reader = ImageReader::with_root(root.clone());
        for c in front {
            match reader.rgb(c) {
                Ok(image) => {
                    return Ok(Some(SheetSubject {
                        root,
                        cam: c.clone(),
                        image,
                    }))
                }
                // The image stages' rule for what is the data's fault.
                Err(e) => match crate::store::rejects::Reject::bad_image(
                    "contact_sheet",
                    &c.scene_id,
                    &c.camera_frame_id,
                    &e,
                ) {
                    Some(r) => eprintln!("drivegen: contact sheet: passing over {}", r.reason),
                    None => return Err(e),
                },
            }
        }
    }
    Ok(None)
}

/// Up to `n` Set-of-Mark images, drawn from the stages' `marked_images.arrow` (spread over the
/// whole set rather than the first frame's six cameras), scaled to 480 px wide JPEGs under
/// `assets`; returns their names. `som` pairs each Set-of-Mark folder with its store.
fn marked_thumbnails(som: &[(PathBuf, PathBuf)], n: usize, assets: &Path) -> Result<Vec<String>> {
    use crate::som::recipe;
    let tables: Vec<(PathBuf, &PathBuf)> = som
        .iter()
        .map(|(d, store)| (d.join(recipe::FILE), store))
        .filter(|(f, _)| f.is_file())
        .collect();
    let mut total = 0;
    for (f, _) in &tables {
        let r = arrow::ipc::reader::FileReader::try_new(crate::store::input::open(f)?, None)?;
        for b in r {
            total += b?.num_rows();
        }
    }
    let step = (total / n.max(1)).max(1);
    let mut names = Vec::new();
    let mut at = 0;
    for (f, store) in &tables {
        let r = arrow::ipc::reader::FileReader::try_new(crate::store::input::open(f)?, None)?;
        let draw = recipe::draw_config(f, &r.schema())?;
        let mut picks: Vec<recipe::MarkedImage> = Vec::new();
        for b in r {
            let b = b?;
            for (k, m) in recipe::from_batch(f, &b)?.into_iter().enumerate() {
                if (at + k) % step == 0 && names.len() + picks.len() < n {
                    picks.push(m);
                }
            }
            at += b.num_rows();
        }
        if picks.is_empty() {
            continue;
        }
        let store = crate::store::Store::open(store)?;
        let images = crate::images::ImageReader::new(&store, None);
        for data in store.scenes()? {
            let data = data?;
            for m in picks.iter().filter(|m| m.scene_id == data.scene.scene_id) {
                let Some(cam) = data
                    .cameras
                    .iter()
                    .find(|c| c.camera_frame_id == m.camera_frame_id)
                else {
                    continue;
                };
                // A report picture is not worth failing the build over.
                let Ok(base) = images.rgb_checked(cam) else {
                    continue;
                };
                let img = image::DynamicImage::from(recipe::draw(&base, &m.marks, &draw, None)?);
                let w = 480.min(img.width()).max(1);
                let h =
                    (u64::from(img.height()) * u64::from(w) / u64::from(img.width().max(1))).max(1);
                let small = img
                    .resize_exact(w, h as u32, image::imageops::FilterType::Triangle)
                    .into_rgb8();
                let bytes = crate::jpeg::encode(small.as_raw(), w as usize, h as usize, 85)?;
                let name = format!("marked_{:02}.jpg", names.len());
                write_atomic(&assets.join(&name), &bytes)?;
                names.push(name);
            }
        }
    }
    Ok(names)
}

fn balance_section(work: &Path, html: &mut String) {
    let Ok(rd) = std::fs::read_dir(work.join("families")) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    dirs.sort();
    for d in dirs {
        let Ok(text) = crate::store::input::read_to_string(
            &d.join("balance_report.json"),
            crate::store::input::METADATA,
        ) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let family = d.file_name().map(|n| n.to_string_lossy().into_owned());
        let _ = write!(
            html,
            "<h3>{}</h3><p>{} of {} items selected ({} rows), {} fallback steps. Majority-answer \
             accuracy (what a model that ignores the images scores) {:.3} before, {:.3} after.</p>",
            esc(family.as_deref().unwrap_or("")),
            v["items_selected"],
            v["items_in"],
            v["rows_selected"],
            v["fallbacks"],
            v["majority_accuracy_before"].as_f64().unwrap_or(0.0),
            v["majority_accuracy_after"].as_f64().unwrap_or(0.0),
        );
        let _ = write!(
            html,
            "<table><tr><th>question type</th><th>max deviation before</th><th>after</th>\
             <th>majority accuracy before</th><th>after</th></tr>"
        );
        let mut charts = String::new();
        if let Some(per) = v["per_type"].as_object() {
            for (q, t) in per {
                let _ = write!(
                    html,
                    "<tr><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
                    esc(q),
                    t["max_deviation_before"].as_f64().unwrap_or(0.0),
                    t["max_deviation_after"].as_f64().unwrap_or(0.0),
                    t["majority_accuracy_before"].as_f64().unwrap_or(0.0),
                    t["majority_accuracy_after"].as_f64().unwrap_or(0.0),
                );
                let share = |k: &str| -> BTreeMap<String, f64> {
                    let m: BTreeMap<String, f64> = t[k]
                        .as_object()
                        .map(|o| {
                            o.iter()
                                .map(|(a, n)| (a.clone(), n.as_f64().unwrap_or(0.0)))
                                .collect()
                        })
                        .unwrap_or_default();
                    let total: f64 = m.values().sum::<f64>().max(1e-9);
                    m.into_iter().map(|(a, n)| (a, n / total)).collect()
                };
                let (before, after) = (share("before"), share("after"));
                let classes: Vec<String> = before.keys().cloned().collect();
                let pick = |m: &BTreeMap<String, f64>| -> Vec<f64> {
                    classes
                        .iter()
                        .map(|c| m.get(c).copied().unwrap_or(0.0))
                        .collect()
                };
                charts.push_str(&grouped_bars(
                    &format!("{q}: answer shares"),
                    &classes,
                    &[
                        Series {
                            name: "before",
                            colour: "#b0b0b0",
                            values: pick(&before),
                        },
                        Series {
                            name: "after",
                            colour: "#4a7ebb",
                            values: pick(&after),
                        },
                    ],
                ));
            }
        }
        html.push_str("</table><div class=\"charts\">");
        html.push_str(&charts);
        html.push_str("</div>");
    }
}

/// The robustness splits, and with `[report] predictions` the model's scores on them: a plot
/// per family of accuracy per setting beside clean, text-only and chance.
fn robustness_section(
    opts: &BuildOptions,
    dir: &Path,
    manifest: &serde_json::Value,
    html: &mut String,
) -> Result<()> {
    let r = &manifest["robustness"];
    if r.is_null() {
        return Ok(());
    }
    let _ = write!(
        html,
        "<h2>Corruption robustness</h2><p>Up to {} questions of each of {} asked again under          each setting (seed {}).</p><table><tr><th>split</th><th>corruption</th>         <th>severity</th><th>rows</th><th>images drawn</th></tr>",
        r["rows_per_family"],
        esc(&r["families"]
            .as_array()
            .map(|a| a.iter().filter_map(|f| f.as_str()).collect::<Vec<_>>().join(", "))
            .unwrap_or_default()),
        r["seed"]
    );
    for s in r["settings"].as_array().into_iter().flatten() {
        let split = s["split"].as_str().unwrap_or_default();
        let rows: u64 = manifest["split_counts"][split]
            .as_object()
            .map_or(0, |f| f.values().filter_map(|v| v.as_u64()).sum());
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{rows}</td><td>{}</td></tr>",
            esc(split),
            esc(s["display_name"].as_str().unwrap_or_default()),
            s["severity"],
            s["images"]["drawn"]
        );
    }
    html.push_str("</table>");
    let Some(p) = &opts.config.report.predictions else {
        html.push_str(
            "<p>No predictions scored (<code>[report] predictions</code>, or              <code>drivegen score --html</code>).</p>",
        );
        return Ok(());
    };
    let predictions = crate::score::read_predictions(p)?;
    let scored = crate::score::score_release(dir, true, &predictions, None)?;
    let _ = write!(
        html,
        "<p>Predictions <code>{}</code>: accuracy per setting over the re-asked rows with 95 %          paired bootstrap intervals; grey bars black views out; the dashed line is chance.</p>",
        esc(&p.display().to_string())
    );
    html.push_str(&crate::score::robustness::plots(&scored.robustness, "h3"));
    Ok(())
}

/// Writes `report.html` (and `report/` assets next to it).
pub(crate) fn write(
    opts: &BuildOptions,
    steps: &[StepRecord],
    inputs: &Inputs,
    file: &Path,
) -> Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let assets = dir.join("report");
    let mut html = String::new();
    let _ = write!(
        html,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{name}</title><style>\
         body{{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}}\
         .charts svg{{margin:4px;border:1px solid #eee}}.grid img{{width:380px;margin:3px}}\
         </style></head><body><h1>{name}</h1><p>drivegen {ver}, seed {seed}, config hash {hash}.</p>",
        name = esc(&opts.config.name),
        ver = env!("CARGO_PKG_VERSION"),
        seed = opts.config.seed,
        hash = super::BuildConfig::hash_of(&opts.config_text),
    );
    // Release contents.
    let manifest: serde_json::Value = crate::store::input::read_to_string(
        &dir.join("manifest.json"),
        crate::store::input::METADATA,
    )
    .ok()
    .and_then(|t| serde_json::from_str(&t).ok())
    .unwrap_or_default();
    let _ = write!(
        html,
        "<h2>Release</h2><p>{} questions, {} images, {} shards.</p>\
         <table><tr><th>family</th><th>question type</th><th>rows</th></tr>",
        manifest["rows"],
        manifest["images"],
        manifest["shards"].as_array().map_or(0, Vec::len)
    );
    if let Some(fams) = manifest["counts"].as_object() {
        for (f, types) in fams {
            if let Some(types) = types.as_object() {
                for (t, n) in types {
                    let _ = write!(
                        html,
                        "<tr><td>{}</td><td>{}</td><td>{n}</td></tr>",
                        esc(f),
                        esc(t)
                    );
                }
            }
        }
    }
    html.push_str("</table>");
    blind_section(&manifest, &mut html);
    robustness_section(opts, dir, &manifest, &mut html)?;
    // Timings.
    html.push_str(
        "<h2>Steps</h2><table><tr><th>step</th><th>status</th><th>seconds</th><th>peak RSS (MiB)</th><th>what</th></tr>",
    );
    for s in steps {
        let status = match s.status {
            StepStatus::Ran => "ran",
            StepStatus::Reused => "reused (earlier run)",
        };
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{status}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.step),
            s.seconds,
            match (s.peak_rss_mib, s.start_rss_mib) {
                (Some(p), Some(s)) => format!("{p:.0} (step: +{:.0})", p - s),
                (Some(p), None) => format!("{p:.0}"),
                _ => "–".into(),
            },
            esc(&s.detail)
        );
    }
    html.push_str("</table>");
    let items: Vec<(String, f64)> = steps.iter().map(|s| (s.step.clone(), s.seconds)).collect();
    html.push_str(&hbars("Seconds per step", &items, "s"));
    let rss: Vec<(String, f64)> = steps
        .iter()
        .filter_map(|s| Some((s.step.clone(), s.peak_rss_mib?)))
        .collect();
    if !rss.is_empty() {
        html.push_str(&hbars("Peak resident memory per step", &rss, "MiB"));
    }
    // Balancing.
    html.push_str("<h2>Class balance per question type</h2>");
    balance_section(&opts.work, &mut html);
    // Corruptions.
    if assets.join("contact_sheet.png").is_file() {
        html.push_str(
            "<h2>Corruptions</h2><p>One front image under all 15 corruptions × 5 severities \
             (legend with every cell's parameters: <code>report/contact_sheet.png.json</code>).\
             </p><img src=\"report/contact_sheet.png\" style=\"max-width:100%\">",
        );
    }
    // Marked images.
    let thumbs = marked_thumbnails(&inputs.som, opts.config.report.marked_images, &assets)?;
    if !thumbs.is_empty() {
        html.push_str("<h2>Set-of-Mark images</h2><div class=\"grid\">");
        for t in thumbs {
            let _ = write!(html, "<img src=\"report/{t}\">");
        }
        html.push_str("</div>");
    }
    html.push_str("</body></html>\n");
    write_atomic(file, html.as_bytes())
}
