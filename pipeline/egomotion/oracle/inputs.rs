//! What a rule reads, measured on one clip: a channel's samples, an aggregate of them, or a
//! summary feature. The names and their parsing are the config's (`config::inputs`), so a
//! config can be checked without kinematics.

pub(crate) use crate::egomotion::config::inputs::{Agg, Channel, Input};
use crate::egomotion::kinematics::{percentile, Features, Kinematics};

impl Channel {
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

impl Agg {
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

/// A measured input: the value, and the sample it came from when there is one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Measured {
    pub value: f64,
    pub index: Option<usize>,
}

impl Input {
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
