//! What a rule reads, as the config spells it: a summary feature (`max_speed`) or an
//! aggregate of a per-sample channel (`min(accel)`, `abs_max(yaw_rate)`, `p95(jerk)`).
//!
//! Only the names live here, so that a config can be checked without the kinematics; the
//! oracle ([`crate::egomotion::oracle::inputs`]) reads the values.

/// The summary features a rule can read, in the order they are written. They are listed here
/// rather than beside `Features` because the config names them: kinematics depends on the
/// config, so the config cannot depend on kinematics for its vocabulary.
pub(in crate::egomotion) const FEATURES: [&str; 14] = [
    "max_speed",
    "mean_speed",
    "min_accel",
    "max_accel",
    "mean_accel",
    "max_abs_yaw_rate",
    "signed_max_yaw_rate",
    "max_abs_jerk",
    "p95_abs_jerk",
    "mean_abs_jerk",
    "max_lateral_accel",
    "total_heading_change",
    "net_heading_change",
    "max_abs_curvature",
];

/// A per-sample channel of a clip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Channel {
    T,
    X,
    Y,
    Yaw,
    Speed,
    Accel,
    Jerk,
    YawRate,
    /// Signed v·ω.
    LatAccel,
    /// v·|ω|, the reference's lateral acceleration.
    LatAccelAbs,
}

impl Channel {
    pub const ALL: [(&'static str, Channel); 10] = [
        ("t", Channel::T),
        ("x", Channel::X),
        ("y", Channel::Y),
        ("yaw", Channel::Yaw),
        ("speed", Channel::Speed),
        ("accel", Channel::Accel),
        ("jerk", Channel::Jerk),
        ("yaw_rate", Channel::YawRate),
        ("lat_accel", Channel::LatAccel),
        ("lat_accel_abs", Channel::LatAccelAbs),
    ];

    pub fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| *c)
            .ok_or_else(|| {
                format!(
                    "unknown channel {name:?} (known: {})",
                    Self::ALL.map(|(n, _)| n).join(", ")
                )
            })
    }

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, c)| *c == self)
            .map_or("?", |(n, _)| n)
    }
}

/// How a channel is reduced to one number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Agg {
    Mean,
    Min,
    Max,
    Rms,
    /// The signed value of largest magnitude (first occurrence).
    AbsMax,
    /// The largest magnitude.
    MaxAbs,
    MeanAbs,
    /// numpy-style linear percentile.
    Percentile(f64),
}

impl Agg {
    pub fn parse(name: &str) -> Result<Self, String> {
        Ok(match name {
            "mean" => Agg::Mean,
            "min" => Agg::Min,
            "max" => Agg::Max,
            "rms" => Agg::Rms,
            "abs_max" => Agg::AbsMax,
            "max_abs" => Agg::MaxAbs,
            "mean_abs" => Agg::MeanAbs,
            p if p.starts_with('p') => {
                let v: f64 = p[1..]
                    .parse()
                    .map_err(|_| format!("unknown aggregation {name:?}"))?;
                if !(0.0..=100.0).contains(&v) {
                    return Err(format!("percentile {name:?} outside p0–p100"));
                }
                Agg::Percentile(v)
            }
            _ => {
                return Err(format!(
                    "unknown aggregation {name:?} (known: mean, min, max, rms, abs_max, max_abs, mean_abs, pNN)"
                ))
            }
        })
    }
}

/// A rule input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Input {
    Feature(&'static str),
    Aggregate(Agg, Channel),
}

impl Input {
    /// `feature` or `agg(channel)`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Some(open) = s.find('(') {
            let Some(inner) = s[open + 1..].strip_suffix(')') else {
                return Err(format!("input {s:?}: expected agg(channel)"));
            };
            return Ok(Input::Aggregate(
                Agg::parse(&s[..open])?,
                Channel::parse(inner)?,
            ));
        }
        FEATURES
            .iter()
            .find(|n| **n == s)
            .map(|n| Input::Feature(n))
            .ok_or_else(|| {
                format!(
                    "unknown feature {s:?} (known: {}; or agg(channel))",
                    FEATURES.join(", ")
                )
            })
    }
}
