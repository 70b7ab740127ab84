//! DriveBench's corruption-recognition questions ("Corrupt. Rec."), in the common QA record
//! (family `drivebench`): "What is the current type of corruption?" over the 15 names, and,
//! for Camera Crash and Frame Lost, "How many cameras don't have any images?". Options are
//! shuffled with a seed derived from the question id, so letters come out uniform.

use serde_json::{json, Value};

use super::Corruption;
use crate::qa::{qa_id, set_answer, Family, Layout, Prompt, QaRecord};
use crate::Result;

/// One view of the frame a question is asked about.
#[derive(Debug, Clone)]
pub(crate) struct ShownView {
    pub camera: String,
    pub camera_frame_id: String,
    /// Whether the corruption changed this view.
    pub applied: bool,
}

/// Where the frame comes from.
#[derive(Debug, Clone)]
pub(crate) struct FrameRef {
    pub source: String,
    pub scene_id: String,
    pub frame_idx: Option<u32>,
    pub frame_id: String,
}

pub(crate) const TYPE_QUESTION: &str = "What is the current type of corruption?";
pub(crate) const COUNT_QUESTION: &str = "How many cameras don't have any images?";

#[allow(clippy::too_many_arguments)]
fn record(
    frame: &FrameRef,
    question_type: &str,
    corruption: Corruption,
    severity: u8,
    seed: u64,
    shown: &[&ShownView],
    rule: &str,
    params: Value,
    evidence: &Value,
) -> QaRecord {
    let sev = format!("severity={severity}");
    let mut refs: Vec<&str> = vec![&frame.frame_id, &sev];
    refs.extend(shown.iter().map(|v| v.camera_frame_id.as_str()));
    QaRecord {
        qa_id: qa_id(
            Family::Drivebench.name(),
            question_type,
            &refs,
            Some(corruption.name()),
            seed,
        ),
        family: Family::Drivebench.name().into(),
        question_type: question_type.into(),
        source: frame.source.clone(),
        scene_id: frame.scene_id.clone(),
        frame_idx: frame.frame_idx,
        clip_id: None,
        cameras: shown.iter().map(|v| v.camera.clone()).collect(),
        camera_frame_ids: shown.iter().map(|v| v.camera_frame_id.clone()).collect(),
        objects: Vec::new(),
        marks: "{}".into(),
        corruption: Some(corruption.name().into()),
        severity: Some(severity),
        rule: rule.into(),
        params: params.to_string(),
        evidence: evidence.to_string(),
        seed,
        ..Default::default()
    }
}

/// The questions about one frame under one corruption and severity. `evidence` is the
/// frame's recorded draws (which views were changed, crashed or lost).
pub(crate) fn frame_questions(
    frame: &FrameRef,
    corruption: Corruption,
    severity: u8,
    seed: u64,
    views: &[ShownView],
    evidence: &Value,
) -> Result<Vec<QaRecord>> {
    let mut out = Vec::new();
    let sensor = matches!(corruption, Corruption::CameraCrash | Corruption::FrameLost);
    // Sensor failures are recognisable only with the whole rig in view; the others show the
    // views they changed.
    let shown: Vec<&ShownView> = if sensor {
        views.iter().collect()
    } else {
        views.iter().filter(|v| v.applied).collect()
    };
    if views.iter().any(|v| v.applied) {
        let names: Vec<String> = Corruption::ALL
            .iter()
            .map(|c| c.display_name().to_string())
            .collect();
        let mut r = record(
            frame,
            "corruption_type",
            corruption,
            severity,
            seed,
            &shown,
            "the corruption drivegen applied to the shown images",
            json!({"options": names.len()}),
            evidence,
        );
        set_answer(&mut r, &names, corruption.index() as usize, true)?;
        r.prompt = Prompt::new(Layout::DriveBench, TYPE_QUESTION);
        out.push(r);
    }
    if sensor {
        let black = views.iter().filter(|v| v.applied).count();
        let counts: Vec<String> = (0..=views.len()).map(|n| n.to_string()).collect();
        let mut r = record(
            frame,
            "camera_failure_count",
            corruption,
            severity,
            seed,
            &shown,
            "count of the shown views the corruption blacked out",
            json!({"views": views.len()}),
            evidence,
        );
        set_answer(&mut r, &counts, black, true)?;
        r.prompt = Prompt::new(Layout::DriveBench, COUNT_QUESTION);
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn views(applied: &[bool]) -> Vec<ShownView> {
        applied
            .iter()
            .enumerate()
            .map(|(i, a)| ShownView {
                camera: format!("CAM_{i}"),
                camera_frame_id: format!("tok{i}"),
                applied: *a,
            })
            .collect()
    }

    #[test]
    fn questions_hold_the_invariants() {
        let mut all = Vec::new();
        for f in 0..40u32 {
            let frame = FrameRef {
                source: "synthetic".into(),
                scene_id: "s".into(),
                frame_idx: Some(f),
                frame_id: format!("s/{f}"),
            };
            for c in Corruption::ALL {
                let v = views(&[true, f % 2 == 0, false, f % 3 == 0, false, true]);
                all.extend(frame_questions(&frame, c, 4, 0, &v, &json!({})).unwrap_or_default());
            }
        }
        crate::qa::check_invariants(&all).unwrap_or_else(|e| panic!("{}", e.join("\n")));
        let count = all
            .iter()
            .find(|r| r.question_type == "camera_failure_count" && r.frame_idx == Some(0))
            .map(|r| r.answer.clone());
        assert_eq!(count.as_deref(), Some("4"));
        let t = &all[0];
        let q = t.question();
        assert!(q.starts_with(TYPE_QUESTION) && q.contains("A. "));
        assert_eq!(t.cameras, vec!["CAM_0", "CAM_1", "CAM_3", "CAM_5"]);
    }
}
