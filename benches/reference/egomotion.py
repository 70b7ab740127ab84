"""A numpy/scipy implementation of drivegen's EgoDyn kinematics and oracle.

It follows the semantics of the public EgoDyn-Bench reference (docs/egodyn.md
sections 1-3): linear resampling with extrapolation, unwrapped yaw, numpy.gradient-style
differences with Savitzky-Golay smoothing (scipy.signal.savgol_filter) after every stage, the
summary features, and the 14 rules with the reference's exact comparison operators. The
thresholds are read from configs/egodyn.toml, so both implementations always use the same ones.

Two uses:
  check  - reads {"clips": [{"ts_us": [...], "x": [...], "y": [...], "yaw": [...],
           "duration": float}]} on stdin and writes every clip's arrays, features and labels
           as JSON (tests/it/egomotion/egomotion_reference.rs compares them with drivegen's);
  bench  - reads the same JSON from a file and reports clips/s for kinematics + oracle
           (benches/egomotion.rs measures drivegen on the same clips).
"""

import argparse
import json
import math
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
from scipy.interpolate import interp1d
from scipy.signal import savgol_filter

ROOT = Path(__file__).resolve().parents[2]


def load_config(path=None):
    with open(path or ROOT / "configs" / "egodyn.toml", "rb") as f:
        return tomllib.load(f)


# --------------------------------------------------------------------------- kinematics


def grid_samples(duration, hz):
    x = duration * hz
    r = round(x)
    k = r if abs(x - r) <= 1e-9 * max(r, 1.0) else math.ceil(x)
    return int(k) + 1


def resample(ts_us, x, y, yaw, duration, hz):
    t = (np.asarray(ts_us, dtype=np.int64) - ts_us[0]) / 1e6
    n = grid_samples(duration, hz)
    g = np.linspace(0.0, duration, n)
    fx = interp1d(t, x, kind="linear", fill_value="extrapolate")
    fy = interp1d(t, y, kind="linear", fill_value="extrapolate")
    fyaw = interp1d(t, np.unwrap(yaw), kind="linear", fill_value="extrapolate")
    return g, fx(g), fy(g), fyaw(g)


def diff(t, v):
    out = np.empty_like(v)
    out[1:-1] = (v[2:] - v[:-2]) / (t[2:] - t[:-2])
    out[0] = (v[1] - v[0]) / (t[1] - t[0])
    out[-1] = (v[-1] - v[-2]) / (t[-1] - t[-2])
    return out


def kinematics(t, x, y, yaw, sg):
    def smooth(v):
        return savgol_filter(v, sg["window"], sg["polyorder"], mode=sg["mode"], cval=sg["cval"])

    speed = np.empty_like(x)
    speed[1:-1] = np.sqrt((x[2:] - x[:-2]) ** 2 + (y[2:] - y[:-2]) ** 2) / (t[2:] - t[:-2])
    speed[0] = math.sqrt((x[1] - x[0]) ** 2 + (y[1] - y[0]) ** 2) / (t[1] - t[0])
    speed[-1] = math.sqrt((x[-1] - x[-2]) ** 2 + (y[-1] - y[-2]) ** 2) / (t[-1] - t[-2])
    speed = smooth(speed)
    accel = smooth(diff(t, speed))
    yaw_rate = smooth(diff(t, yaw))
    jerk = smooth(diff(t, accel))
    return {
        "t": t, "x": x, "y": y, "yaw": yaw, "speed": speed, "accel": accel, "jerk": jerk,
        "yaw_rate": yaw_rate, "lat_accel": speed * yaw_rate, "lat_accel_abs": speed * np.abs(yaw_rate),
    }


def features(k, floor):
    abs_jerk = np.abs(k["jerk"])
    iw = int(np.argmax(np.abs(k["yaw_rate"])))
    return {
        "max_speed": float(np.max(k["speed"])),
        "mean_speed": float(np.mean(k["speed"])),
        "min_accel": float(np.min(k["accel"])),
        "max_accel": float(np.max(k["accel"])),
        "mean_accel": float(np.mean(k["accel"])),
        "max_abs_yaw_rate": float(abs(k["yaw_rate"][iw])),
        "signed_max_yaw_rate": float(k["yaw_rate"][iw]),
        "max_abs_jerk": float(np.max(abs_jerk)),
        "p95_abs_jerk": float(np.percentile(abs_jerk, 95)),
        "mean_abs_jerk": float(np.mean(abs_jerk)),
        "max_lateral_accel": float(np.max(k["lat_accel_abs"])),
        "total_heading_change": float(np.sum(np.abs(np.diff(k["yaw"])))),
        "net_heading_change": float(abs(k["yaw"][-1] - k["yaw"][0])),
        "max_abs_curvature": float(np.max(np.abs(k["yaw_rate"]) / np.maximum(k["speed"], floor))),
    }


# --------------------------------------------------------------------------- oracle

OPS = {
    "less_than": lambda v, t: v < t,
    "less_equal": lambda v, t: v <= t,
    "greater_than": lambda v, t: v > t,
    "greater_equal": lambda v, t: v >= t,
    "abs_greater_than": lambda v, t: abs(v) > t,
}


def aggregate(agg, v):
    if agg == "mean":
        return float(np.mean(v))
    if agg == "min":
        return float(np.min(v))
    if agg == "max":
        return float(np.max(v))
    if agg == "rms":
        return float(np.sqrt(np.mean(v * v)))
    if agg == "abs_max":
        return float(v[int(np.argmax(np.abs(v)))])
    if agg == "max_abs":
        return float(np.max(np.abs(v)))
    if agg == "mean_abs":
        return float(np.mean(np.abs(v)))
    if agg.startswith("p"):
        return float(np.percentile(v, float(agg[1:])))
    raise ValueError(agg)


def measure(inp, k, f):
    if "(" in inp:
        agg, ch = inp[:-1].split("(")
        return aggregate(agg, k[ch])
    return f[inp]


def classify(rule, k, f):
    kind = rule["type"]
    if kind == "threshold":
        return 0 if OPS[rule["op"]](measure(rule["input"], k, f), rule["threshold"]) else 1
    if kind == "multi_threshold":
        v = measure(rule["input"], k, f)
        for i, th in enumerate(rule["thresholds"]):
            if OPS[rule["op"]](v, th):
                return i
        return len(rule["thresholds"])
    if kind in ("deadzone_sign", "trend"):
        v = measure(rule["input"], k, f)
        return 0 if v > rule["threshold_positive"] else 1 if v < rule["threshold_negative"] else 2
    if kind == "or_event":
        hit = any(OPS[c["op"]](measure(c["input"], k, f), c["threshold"]) for c in rule["conditions"])
        return 0 if hit else 1
    if kind == "sequential_event":
        t = k["t"]
        a, b = rule["first"], rule["second"]
        firsts = np.where([OPS[a["op"]](v, a["threshold"]) for v in k[a["channel"]]])[0]
        seconds = np.where([OPS[b["op"]](v, b["threshold"]) for v in k[b["channel"]]])[0]
        gap = max(rule["min_gap_s"], rule["min_gap_floor_s"])
        st = t[seconds]
        for i in firsts:
            p = np.searchsorted(st, t[i] + gap, side="left")
            if p < len(st) and st[p] <= t[i] + rule["max_gap_s"]:
                return 0
        return 1
    if kind == "state_machine":
        v = k[rule["channel"]]
        cycles, stopped = 0, bool(v[0] < rule["stop_threshold"])
        for s in v[1:]:
            if not stopped and s < rule["stop_threshold"]:
                stopped = True
            elif stopped and s > rule["go_threshold"]:
                cycles, stopped = cycles + 1, False
        return 0 if cycles >= rule["min_cycles"] else 1
    if kind == "peak_half":
        v = k[rule["channel"]]
        i = int(np.argmax(v))
        peak, mean = float(v[i]), float(np.mean(v))
        if abs(mean) > rule["mean_epsilon"]:
            prominent = (peak - mean) / abs(mean) >= rule["prominence_ratio"]
        else:
            prominent = peak >= rule["prominence_ratio"]
        m = rule.get("min_peak_value")
        if not prominent or (m is not None and peak < m):
            return 2
        return 0 if i < len(v) // 2 else 1
    if kind == "half_comparison":
        v = k[rule["channel"]]
        mid = len(v) // 2
        a, b = abs(aggregate(rule["agg"], v[:mid])), abs(aggregate(rule["agg"], v[mid:]))
        big = max(a, b)
        if big < rule["zero_epsilon"] or abs(a - b) / big < rule["similarity_threshold"]:
            return 2
        return 0 if a > b else 1
    if kind == "dominant_axis":
        lo = aggregate(rule["agg"], np.abs(k[rule["longitudinal"]]))
        la = aggregate(rule["agg"], k[rule["lateral"]])
        if lo < rule["deadzone_long"] and la < rule["deadzone_lat"]:
            return 2
        if lo < rule["zero_epsilon"]:
            return 1
        return 1 if la / lo > rule["ratio_threshold"] else 0
    raise ValueError(kind)


def label_all(cfg, k, f):
    return {q["id"]: q["choices"][classify(q["rule"], k, f)] for q in cfg["questions"]}


def process(cfg, clip):
    c = cfg["clips"]
    t, x, y, yaw = resample(clip["ts_us"], clip["x"], clip["y"], clip["yaw"], clip["duration"], c["sampling_hz"])
    k = kinematics(t, x, y, yaw, cfg["kinematics"]["savgol"])
    f = features(k, cfg["kinematics"]["curvature_speed_floor"])
    return k, f, label_all(cfg, k, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["check", "bench"])
    ap.add_argument("--clips", help="bench: the clips JSON written by benches/egomotion.rs")
    ap.add_argument("--config", help="an egodyn TOML config (default: configs/egodyn.toml)")
    ap.add_argument("--seconds", type=float, default=3.0, help="bench: minimum measuring time")
    args = ap.parse_args()
    cfg = load_config(args.config)
    if args.mode == "check":
        clips = json.load(sys.stdin)["clips"]
        out = []
        for clip in clips:
            k, f, labels = process(cfg, clip)
            out.append({
                **{n: [float(v) for v in k[n]] for n in ("t", "x", "y", "yaw", "speed", "accel", "jerk", "yaw_rate", "lat_accel")},
                "features": f,
                "labels": labels,
            })
        json.dump({"clips": out}, sys.stdout)
        return
    with open(args.clips) as fh:
        clips = json.load(fh)["clips"]
    done, start = 0, time.perf_counter()
    while True:
        for clip in clips:
            process(cfg, clip)
        done += len(clips)
        elapsed = time.perf_counter() - start
        if elapsed >= args.seconds:
            break
    print(json.dumps({"clips": done, "seconds": elapsed, "clips_per_second": done / elapsed}))


if __name__ == "__main__":
    main()
