//! Checks of the questions as the config writes them: every rule's parameters and inputs, its
//! class count against the choices, and the placeholders of the question text. Config
//! validation runs them so a bad question fails at load; the oracle compiles from what they
//! return, so the two cannot disagree.

use super::inputs::{Agg, Channel, Input};
use super::rule::Rule;
use super::QuestionConfig;

/// A question as checked: its rule after α scaling, the rule's parsed inputs, and its text
/// with the placeholders filled.
pub(in crate::egomotion) struct Checked {
    pub(in crate::egomotion) rule: Rule,
    pub(in crate::egomotion) parsed: Parsed,
    pub(in crate::egomotion) text: String,
}

/// What a rule reads, parsed.
pub(in crate::egomotion) struct Parsed {
    pub(in crate::egomotion) inputs: Vec<Input>,
    pub(in crate::egomotion) channels: Vec<Channel>,
    pub(in crate::egomotion) agg: Option<Agg>,
}

/// Checks one question at `alpha`; the error names the question.
pub(in crate::egomotion) fn checked(q: &QuestionConfig, alpha: f64) -> Result<Checked, String> {
    let ctx = |e: String| format!("question {}: {e}", q.id);
    let rule = q.rule.scaled(alpha);
    let parsed = rule.parsed().map_err(ctx)?;
    if rule.num_classes() != q.choices.len() {
        return Err(ctx(format!(
            "rule {} gives {} classes but there are {} choices",
            rule.type_name(),
            rule.num_classes(),
            q.choices.len()
        )));
    }
    let text = fill_template(&q.text, &rule.named_params()).map_err(ctx)?;
    Ok(Checked { rule, parsed, text })
}

/// A number as question texts show it: at most two decimals, no trailing zeros
/// (`5` , `18`, `15` for 15.0002°, `4.5`).
pub(crate) fn fmt_num(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// Fills `{name}`, `{name_kmh}` (m/s → km/h) and `{name_deg}` (rad → degrees) from `params`.
pub(crate) fn fill_template(text: &str, params: &[(String, f64)]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(format!("unclosed placeholder in {text:?}"));
        };
        let key = &after[..close];
        let lookup = |name: &str| params.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let value = if let Some(v) = lookup(key) {
            v
        } else if let Some(v) = key.strip_suffix("_kmh").and_then(lookup) {
            v * 3.6
        } else if let Some(v) = key.strip_suffix("_deg").and_then(lookup) {
            v.to_degrees()
        } else {
            let known: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
            return Err(format!(
                "unknown placeholder {{{key}}} in {text:?} (parameters: {})",
                known.join(", ")
            ));
        };
        out.push_str(&fmt_num(value));
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Rule {
    /// Checks the rule's parameters and parses what it reads.
    pub(in crate::egomotion) fn parsed(&self) -> Result<Parsed, String> {
        let inputs = self.checked_inputs()?;
        let channels = self.parse_channels()?;
        let agg = match self {
            Rule::HalfComparison { agg, .. } | Rule::DominantAxis { agg, .. } => {
                Some(Agg::parse(agg)?)
            }
            _ => None,
        };
        Ok(Parsed {
            inputs,
            channels,
            agg,
        })
    }

    /// Checks the rule's numeric parameters and parses the inputs of the rules that read one
    /// value per input (none for the rules that read whole channels). The first bad value, in
    /// parameter order, names the error.
    fn checked_inputs(&self) -> Result<Vec<Input>, String> {
        Ok(match self {
            Rule::Threshold {
                input, threshold, ..
            } => {
                finite("threshold", *threshold)?;
                vec![Input::parse(input)?]
            }
            Rule::MultiThreshold {
                input, thresholds, ..
            } => {
                if thresholds.is_empty() {
                    return Err("thresholds must not be empty".into());
                }
                for t in thresholds {
                    finite("thresholds", *t)?;
                }
                if thresholds.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(format!(
                        "thresholds must be strictly ascending, got {thresholds:?}"
                    ));
                }
                vec![Input::parse(input)?]
            }
            Rule::DeadzoneSign {
                input,
                threshold_positive,
                threshold_negative,
            }
            | Rule::Trend {
                input,
                threshold_positive,
                threshold_negative,
            } => {
                finite("threshold_positive", *threshold_positive)?;
                finite("threshold_negative", *threshold_negative)?;
                if threshold_negative > threshold_positive {
                    return Err("threshold_negative must not exceed threshold_positive".into());
                }
                vec![Input::parse(input)?]
            }
            Rule::OrEvent { conditions } => {
                if conditions.is_empty() {
                    return Err("or_event needs at least one condition".into());
                }
                conditions
                    .iter()
                    .map(|c| {
                        finite("threshold", c.threshold)?;
                        Input::parse(&c.input)
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
            _ => {
                self.check_channel_params()?;
                Vec::new()
            }
        })
    }

    /// Checks the numeric parameters of the rules that read whole channels; the others check
    /// theirs with their inputs.
    fn check_channel_params(&self) -> Result<(), String> {
        match self {
            Rule::SequentialEvent {
                first,
                second,
                min_gap_s,
                max_gap_s,
                min_gap_floor_s,
            } => {
                for (n, v) in [
                    ("first.threshold", first.threshold),
                    ("second.threshold", second.threshold),
                    ("min_gap_s", *min_gap_s),
                    ("min_gap_floor_s", *min_gap_floor_s),
                ] {
                    finite(n, v)?;
                }
                if max_gap_s.is_nan() || *max_gap_s < 0.0 {
                    return Err("max_gap_s must be ≥ 0".into());
                }
            }
            Rule::StateMachine {
                stop_threshold,
                go_threshold,
                ..
            } => {
                finite("stop_threshold", *stop_threshold)?;
                finite("go_threshold", *go_threshold)?;
            }
            Rule::PeakHalf {
                prominence_ratio,
                mean_epsilon,
                ..
            } => {
                finite("prominence_ratio", *prominence_ratio)?;
                finite("mean_epsilon", *mean_epsilon)?;
            }
            Rule::HalfComparison {
                similarity_threshold,
                zero_epsilon,
                ..
            } => {
                finite("similarity_threshold", *similarity_threshold)?;
                finite("zero_epsilon", *zero_epsilon)?;
            }
            Rule::DominantAxis {
                deadzone_long,
                deadzone_lat,
                ratio_threshold,
                zero_epsilon,
                ..
            } => {
                for (n, v) in [
                    ("deadzone_long", *deadzone_long),
                    ("deadzone_lat", *deadzone_lat),
                    ("ratio_threshold", *ratio_threshold),
                    ("zero_epsilon", *zero_epsilon),
                ] {
                    finite(n, v)?;
                }
            }
            Rule::Threshold { .. }
            | Rule::MultiThreshold { .. }
            | Rule::DeadzoneSign { .. }
            | Rule::Trend { .. }
            | Rule::OrEvent { .. } => {}
        }
        Ok(())
    }

    /// Parses the channels of the rules that read whole channels (none for the others).
    fn parse_channels(&self) -> Result<Vec<Channel>, String> {
        Ok(match self {
            Rule::SequentialEvent { first, second, .. } => {
                vec![
                    Channel::parse(&first.channel)?,
                    Channel::parse(&second.channel)?,
                ]
            }
            Rule::StateMachine { channel, .. }
            | Rule::PeakHalf { channel, .. }
            | Rule::HalfComparison { channel, .. } => vec![Channel::parse(channel)?],
            Rule::DominantAxis {
                longitudinal,
                lateral,
                ..
            } => vec![Channel::parse(longitudinal)?, Channel::parse(lateral)?],
            _ => Vec::new(),
        })
    }
}

/// `Ok` when `v` is finite; else the error names the parameter.
fn finite(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(format!("{name} must be finite, got {v}"))
    }
}
