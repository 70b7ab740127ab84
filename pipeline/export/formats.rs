//! The three writers behind `drivegen export`, one row at a time.

use std::io::Write;

use base64::Engine;
use serde_json::{json, Value};

use super::{image_bytes, ExportOptions, Format, ImageDir};
use crate::qa::record::letter;
use crate::qa::QaRecord;
use crate::release::read::{RowSetting, ShownImage};
use crate::store::atomic::AtomicFile;
use crate::{Error, Result};

/// A field as VLMEvalKit's writer quotes every field: in double quotes, quotes doubled, so tabs
/// and newlines in a prompt stay inside it for pandas' reader.
pub(crate) fn tsv_field(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

pub(super) struct Writer {
    format: Format,
    out: std::path::PathBuf,
    name: String,
    /// The open file of the current split (LLaVA, JSONL) or of the whole export (VLMEvalKit).
    file: Option<AtomicFile>,
    /// Rows written to `file` so far (LLaVA separates its list's items).
    in_file: usize,
    /// VLMEvalKit's option columns, as many as the widest row needs.
    options: usize,
    files: Vec<String>,
}

fn io(f: &AtomicFile, e: std::io::Error) -> Error {
    Error::io(f.path(), e)
}

impl Writer {
    pub(super) fn new(opts: &ExportOptions) -> Result<Self> {
        let mut w = Self {
            format: opts.format,
            out: opts.out.clone(),
            name: opts.name.clone(),
            file: None,
            in_file: 0,
            options: 0,
            files: Vec::new(),
        };
        if w.format == Format::Vlmevalkit {
            // The header names every option column, so the widest row is found first (the QA
            // columns only: no images are read).
            w.options = crate::release::read::max_choices(&opts.release)?;
            let file = format!("{}.tsv", w.name);
            let mut f = AtomicFile::create(&w.out.join(&file))?;
            let mut header: Vec<String> = ["index", "image", "question", "hint"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            header.extend((0..w.options).map(|i| letter(i).unwrap_or_default()));
            header.extend(
                [
                    "answer",
                    "category",
                    "l2-category",
                    "split",
                    "qa_id",
                    "setting",
                    "base_qa_id",
                ]
                .map(String::from),
            );
            let line: Vec<String> = header.iter().map(|h| tsv_field(h)).collect();
            writeln!(f, "{}", line.join("\t")).map_err(|e| io(&f, e))?;
            w.file = Some(f);
            w.files.push(file);
        }
        Ok(w)
    }

    pub(super) fn begin_split(&mut self, split: &str) -> Result<()> {
        let file = match self.format {
            Format::Vlmevalkit => return Ok(()),
            Format::Llava => format!("{split}.json"),
            Format::Jsonl => format!("{split}.jsonl"),
        };
        let mut f = AtomicFile::create(&self.out.join(&file))?;
        if self.format == Format::Llava {
            f.write_all(b"[").map_err(|e| io(&f, e))?;
        }
        self.file = Some(f);
        self.in_file = 0;
        self.files.push(file);
        Ok(())
    }

    pub(super) fn row(
        &mut self,
        split: &str,
        r: &QaRecord,
        tag: &RowSetting,
        shown: &[ShownImage],
        images: &mut ImageDir,
    ) -> Result<()> {
        let line = match self.format {
            Format::Llava => llava(r, shown, images)?.to_string(),
            Format::Jsonl => jsonl(split, r, tag, shown, images)?.to_string(),
            Format::Vlmevalkit => self.vlmevalkit(split, r, tag, shown)?,
        };
        let sep: &[u8] = match (self.format, self.in_file) {
            (Format::Llava, 0) => b"\n",
            (Format::Llava, _) => b",\n",
            _ => b"",
        };
        let f = self.file.as_mut().ok_or_else(|| Error::Schema {
            table: "export".into(),
            detail: "a row before its file was opened".into(),
        })?;
        f.write_all(sep)
            .and_then(|()| f.write_all(line.as_bytes()))
            .and_then(|()| {
                if self.format == Format::Llava {
                    Ok(())
                } else {
                    f.write_all(b"\n")
                }
            })
            .map_err(|e| Error::io(f.path(), e))?;
        self.in_file += 1;
        Ok(())
    }

    /// One TSV line: the prompt's parts in VLMEvalKit's columns (it adds its own option list
    /// and instruction), the answer as a letter, every field quoted.
    fn vlmevalkit(
        &self,
        split: &str,
        r: &QaRecord,
        tag: &RowSetting,
        shown: &[ShownImage],
    ) -> Result<String> {
        let b64 = |img: &ShownImage| -> Result<String> {
            Ok(base64::engine::general_purpose::STANDARD.encode(image_bytes(img, &r.qa_id)?))
        };
        let image = match shown {
            [one] => b64(one)?,
            many => Value::from(many.iter().map(b64).collect::<Result<Vec<_>>>()?).to_string(),
        };
        // What the model must read besides the options: the context and definitions before
        // the question (hint), the question and what follows its options (definitions, the
        // instruction) after it.
        let mut hint = vec![r.prompt.preamble.clone()];
        hint.extend(r.prompt.note_lines(&r.choices));
        let hint: Vec<String> = hint.into_iter().filter(|s| !s.is_empty()).collect();
        let mut question = r.prompt.stem.clone();
        if !r.prompt.postamble.is_empty() {
            question = format!("{question}\n{}", r.prompt.postamble);
        }
        let mut fields = vec![(self.in_file).to_string(), image, question, hint.join("\n")];
        fields.extend((0..self.options).map(|i| r.choices.get(i).cloned().unwrap_or_default()));
        fields.extend([
            r.answer_letter.clone(),
            format!("{}/{}", r.family, r.question_type),
            r.family.clone(),
            split.to_string(),
            r.qa_id.clone(),
            tag.setting.clone(),
            tag.base_qa_id.clone(),
        ]);
        let quoted: Vec<String> = fields.iter().map(|s| tsv_field(s)).collect();
        Ok(quoted.join("\t"))
    }

    pub(super) fn end_split(&mut self, _split: &str) -> Result<()> {
        if self.format == Format::Vlmevalkit {
            return Ok(());
        }
        self.close()
    }

    fn close(&mut self) -> Result<()> {
        if let Some(mut f) = self.file.take() {
            if self.format == Format::Llava {
                f.write_all(b"\n]\n").map_err(|e| io(&f, e))?;
            }
            f.commit()?;
        }
        Ok(())
    }

    /// Commits the last file; returns the files written.
    pub(super) fn finish(mut self) -> Result<Vec<String>> {
        self.close()?;
        Ok(std::mem::take(&mut self.files))
    }
}

fn paths(r: &QaRecord, shown: &[ShownImage], images: &mut ImageDir) -> Result<Vec<String>> {
    shown.iter().map(|img| images.put(img, &r.qa_id)).collect()
}

/// A LLaVA conversation: the images first, one `<image>` line each in order, then the prompt;
/// the reply is what the prompt asks for.
fn llava(r: &QaRecord, shown: &[ShownImage], images: &mut ImageDir) -> Result<Value> {
    let files = paths(r, shown, images)?;
    let mut human = "<image>\n".repeat(files.len());
    human.push_str(&r.question());
    let reply = if r.prompt.layout.lettered() {
        r.answer_letter.clone()
    } else {
        r.answer.clone()
    };
    let mut v = json!({
        "id": r.qa_id,
        "conversations": [
            {"from": "human", "value": human},
            {"from": "gpt", "value": reply},
        ],
    });
    match files.as_slice() {
        [] => {}
        [one] => v["image"] = json!(one),
        many => v["image"] = json!(many),
    }
    Ok(v)
}

/// A JSONL row: the record's columns, the images as paths.
fn jsonl(
    split: &str,
    r: &QaRecord,
    tag: &RowSetting,
    shown: &[ShownImage],
    images: &mut ImageDir,
) -> Result<Value> {
    Ok(json!({
        "qa_id": r.qa_id,
        "split": split,
        "setting": tag.setting,
        "base_qa_id": tag.base_qa_id,
        "family": r.family,
        "question_type": r.question_type,
        "question": r.question(),
        "choices": r.choices,
        "answer_index": r.answer_index,
        "answer_letter": r.answer_letter,
        "answer": r.answer,
        "images": paths(r, shown, images)?,
        "cameras": r.cameras,
        "camera_frame_ids": r.camera_frame_ids,
        "source_files": shown.iter().map(|s| s.source_file.as_str()).collect::<Vec<_>>(),
        "source": r.source,
        "scene_id": r.scene_id,
        "frame_idx": r.frame_idx,
        "clip_id": r.clip_id,
        "corruption": r.corruption,
        "severity": r.severity,
        "rule": r.rule,
        "params": r.params,
        "evidence": r.evidence,
        "seed": r.seed,
    }))
}
