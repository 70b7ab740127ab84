//! What a rule reads: a summary feature (`max_speed`) or an aggregate of a per-sample channel
//! (`min(accel)`, `abs_max(yaw_rate)`, `p95(jerk)`).

use crate::egomotion::kinematics::{percentile, Features, Kinematics};

/// A per-sample channel of a clip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
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

    pub fn of(self, k: &Kinematics) -> &[f64] {
        match self {
            Channel::T => &k.t,
            Channel::X => &k.x,
            Channel::Y => &k.y,
            Channel::Yaw => &k.yaw,
            Channel::Speed => &k.speed,
            Channel::Accel => &k.accel,
            Channel::Jerk => &k.jerk,
            Channel::YawRate => &k.yaw_rate,
            Channel::LatAccel => &k.lat_accel,
            Channel::LatAccelAbs => &k.lat_accel_abs,
        }
    }
}

/// How a channel is reduced to one number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Agg {
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

    /// The value and, for aggregations that pick a sample, its index.
    pub fn apply(self, v: &[f64]) -> (f64, Option<usize>) {
        if v.is_empty() {
            return (f64::NAN, None);
        }
        let n = v.len() as f64;
        let pick = |better: &dyn Fn(f64, f64) -> bool, key: &dyn Fn(f64) -> f64| {
            let mut best = 0;
            for i in 1..v.len() {
                if better(key(v[i]), key(v[best])) {
                    best = i;
                }
            }
            best
        };
        match self {
            Agg::Mean => (v.iter().sum::<f64>() / n, None),
            Agg::MeanAbs => (v.iter().map(|x| x.abs()).sum::<f64>() / n, None),
            Agg::Rms => ((v.iter().map(|x| x * x).sum::<f64>() / n).sqrt(), None),
            Agg::Min => {
                let i = pick(&|a, b| a < b, &|x| x);
                (v[i], Some(i))
            }
            Agg::Max => {
                let i = pick(&|a, b| a > b, &|x| x);
                (v[i], Some(i))
            }
            Agg::AbsMax => {
                let i = pick(&|a, b| a > b, &f64::abs);
                (v[i], Some(i))
            }
            Agg::MaxAbs => {
                let i = pick(&|a, b| a > b, &f64::abs);
                (v[i].abs(), Some(i))
            }
            Agg::Percentile(p) => (percentile(v, p), None),
        }
    }
}

/// A rule input.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    Feature(&'static str),
    Aggregate(Agg, Channel),
}

/// A measured input: the value, and the sample it came from when there is one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub value: f64,
    pub index: Option<usize>,
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
        Features::NAMES
            .iter()
            .find(|n| **n == s)
            .map(|n| Input::Feature(n))
            .ok_or_else(|| {
                format!(
                    "unknown feature {s:?} (known: {}; or agg(channel))",
                    Features::NAMES.join(", ")
                )
            })
    }

    pub fn measure(&self, k: &Kinematics, f: &Features) -> Measured {
        match self {
            Input::Feature(name) => Measured {
                value: f.get(name).unwrap_or(f64::NAN),
                index: None,
            },
            Input::Aggregate(agg, ch) => {
                let (value, index) = agg.apply(ch.of(k));
                Measured { value, index }
            }
        }
    }
}
