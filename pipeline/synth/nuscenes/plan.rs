//! Every scene's timeline: its log name and date, its sample times, and each channel's
//! readings (timestamp, sample, keyframe or sweep, file name).

use super::super::rig::CAMERAS;
use super::super::tokens::Rng;
use super::super::world::SceneWorld;
use super::super::SynthOptions;
use super::{LIDAR_HZ, SCENE_SPACING_US, T0_US};

/// One sensor reading of a scene.
#[derive(Debug, Clone)]
pub(super) struct Reading {
    /// Position in its channel's stream (for tokens).
    pub(super) n: usize,
    pub(super) ts: i64,
    /// The sample it belongs to (the next one in time, or its own for keyframes).
    pub(super) sample: usize,
    pub(super) key: bool,
    pub(super) filename: String,
}

/// Everything about one scene except the images.
pub(super) struct ScenePlan {
    pub(super) start_us: i64,
    pub(super) logfile: String,
    pub(super) date: String,
    pub(super) sample_ts: Vec<i64>,
    /// Per channel, in time order.
    pub(super) readings: Vec<Vec<Reading>>,
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// The Gregorian date (y, m, d) of a day count since 1970-01-01. Counting whole years and
/// months is plenty fast for the few dates a corpus needs.
fn civil_from_days(mut days: i64) -> (i64, u32, u32) {
    let mut y = 1970;
    loop {
        let len = if is_leap(y) { 366 } else { 365 };
        if days < 0 {
            y -= 1;
            days += if is_leap(y) { 366 } else { 365 };
        } else if days >= len {
            days -= len;
            y += 1;
        } else {
            break;
        }
    }
    let months = [
        31,
        if is_leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut m = 0;
    while days >= months[m] {
        days -= months[m];
        m += 1;
    }
    (y, m as u32 + 1, days as u32 + 1)
}

/// Local date and time strings ("2018-07-24", "11-22-45") of a µs timestamp.
fn local_time(ts_us: i64, utc_offset_h: i64) -> (String, String) {
    let secs = ts_us.div_euclid(1_000_000) + utc_offset_h * 3600;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        format!("{:02}-{:02}-{:02}", sod / 3600, (sod / 60) % 60, sod % 60),
    )
}

/// The first keyframe's timestamp of scene `index` (shared with the other formats' writers,
/// so that every format puts the same world at the same times).
pub(crate) fn scene_start_us(index: usize, duration_s: f64) -> i64 {
    let spacing = SCENE_SPACING_US.max(((duration_s + 30.0) * 1e6) as i64);
    T0_US + index as i64 * spacing
}

pub(super) fn plan_scene(world: &SceneWorld, opts: &SynthOptions) -> ScenePlan {
    let start_us = scene_start_us(world.index, opts.duration_s);
    let place = world.place;
    let (date, clock) = local_time(start_us - 10_000_000, place.utc_offset_h);
    let tz = if place.utc_offset_h >= 0 {
        format!("+{:02}00", place.utc_offset_h)
    } else {
        format!("-{:02}00", -place.utc_offset_h)
    };
    let logfile = format!("{}-{date}-{clock}{tz}", place.vehicle);
    let n_samples = ((opts.duration_s * opts.keyframe_hz).floor() as usize).max(1);
    let sample_ts: Vec<i64> = (0..n_samples)
        .map(|i| start_us + (i as f64 * 1e6 / opts.keyframe_hz).round() as i64)
        .collect();
    let last = *sample_ts.last().unwrap_or(&start_us);
    let mut rng = Rng::new(opts.seed, &format!("scene/{}/timing", world.index));
    let mut readings = Vec::with_capacity(7);
    for cam in &CAMERAS {
        let sweeps = opts.write_sweeps
            && opts
                .sweep_cameras
                .as_ref()
                .is_none_or(|c| c.iter().any(|c| c == cam.channel));
        let period = 1e6 / opts.camera_hz;
        // Frames from the first sample's keyframe to just past the last sample.
        let first = start_us + cam.offset_us;
        let mut times = Vec::new();
        let mut n = 0usize;
        loop {
            let nominal = first as f64 + n as f64 * period;
            if nominal > last as f64 + 0.5 * period {
                break;
            }
            let jitter = (rng.range(-800.0, 800.0)).round() as i64;
            times.push(nominal.round() as i64 + jitter);
            n += 1;
        }
        // The keyframe of each sample: the frame nearest in time.
        let mut key_of = vec![usize::MAX; times.len()];
        for (si, &st) in sample_ts.iter().enumerate() {
            if let Some((fi, _)) = times
                .iter()
                .enumerate()
                .min_by_key(|(_, &t)| (t - st).abs())
            {
                key_of[fi] = si;
            }
        }
        let mut list = Vec::new();
        for (fi, &ts) in times.iter().enumerate() {
            let key = key_of[fi] != usize::MAX;
            let sample = if key {
                key_of[fi]
            } else {
                match sample_ts.iter().position(|&st| st >= ts) {
                    Some(s) => s,
                    None => continue,
                }
            };
            if !key && !sweeps {
                continue;
            }
            let dir = if key { "samples" } else { "sweeps" };
            let filename = format!("{dir}/{ch}/{logfile}__{ch}__{ts}.jpg", ch = cam.channel);
            list.push(Reading {
                n: list.len(),
                ts,
                sample,
                key,
                filename,
            });
        }
        readings.push(list);
    }
    // LIDAR_TOP spins at 20 Hz: every sample is one of its sweeps, the rest go to `sweeps/`.
    // They stay with `--no-sweeps` (small files), because their ego poses are the log's
    // high-rate pose stream that ego-motion work needs, as in real nuScenes.
    let mut lidar: Vec<Reading> = Vec::new();
    let lidar_period = (1e6 / LIDAR_HZ).round() as i64;
    for (si, &ts) in sample_ts.iter().enumerate() {
        // The last sample has no sweeps after it: nothing would own them.
        let next = sample_ts.get(si + 1).copied().unwrap_or(ts + 1);
        let mut t = ts;
        while t < next {
            let key = t == ts;
            let dir = if key { "samples" } else { "sweeps" };
            lidar.push(Reading {
                n: lidar.len(),
                ts: t,
                // nuScenes files a sweep under the sample that follows it.
                sample: if key { si } else { si + 1 },
                key,
                filename: format!("{dir}/LIDAR_TOP/{logfile}__LIDAR_TOP__{t}.pcd.bin"),
            });
            t += lidar_period;
        }
    }
    readings.push(lidar);
    ScenePlan {
        start_us,
        logfile,
        date,
        sample_ts,
        readings,
    }
}

/// Scene time (s) of a timestamp.
pub(super) fn scene_time(plan: &ScenePlan, ts: i64) -> f64 {
    (ts - plan.start_us) as f64 * 1e-6
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        // 2018-07-24 is day 17736.
        assert_eq!(civil_from_days(17_736), (2018, 7, 24));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        let (d, c) = local_time(T0_US, 8);
        assert_eq!((d.as_str(), c.as_str()), ("2018-07-24", "11-28-47"));
    }
}
