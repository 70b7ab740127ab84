"""Question-only check of a drivegen release's STSBench rows, independent of `drivegen audit`.

A conditional-logit model scores each offered option from the text alone: the option's own
text, the option crossed with the preamble's words (agent classes, cameras, the signs and
coarse size of the x/y positions) and with the other options offered (so the option set's
composition counts). It is fitted on some scenes and scored on the held-out ones (folds by
scene), and its accuracy is compared with chance (the mean of 1/options).

usage: stsbench_blind.py RELEASE [--margin 0.05] [--folds 5]
Exit 1 when the held-out accuracy beats chance by more than the margin.
"""

import argparse
import glob
import json
import math
import os
import random
import re
import sys

import pyarrow.parquet as pq


def norm_option(text):
    # Agent names are not the answer; what the option says about them is.
    return re.sub(r"agent \d", "agent", text.lower())


def words(preamble):
    out = set()
    for w in re.findall(r"[a-z_]+", preamble.lower()):
        out.add("w:" + w)
    for axis, val in re.findall(r"\b([xy]) = (-?\d+(?:\.\d+)?) m", preamble):
        v = float(val)
        out.add(f"{axis}:{'neg' if v < 0 else 'pos'}")
        out.add(f"{axis}:{'neg' if v < 0 else 'pos'}:{min(int(abs(v) // 5), 6)}")
    return out


def load(release):
    rows = []
    for f in sorted(glob.glob(os.path.join(release, "data", "**", "*.parquet"), recursive=True)):
        t = pq.read_table(
            f, columns=["family", "scene_id", "prompt_preamble", "choices", "answer_index"]
        )
        for r in t.to_pylist():
            if r["family"] != "stsbench":
                continue
            choices = r["choices"]
            if isinstance(choices, str):
                choices = json.loads(choices)
            opts = [norm_option(c) for c in choices]
            pre = words(r["prompt_preamble"] or "")
            feats = []
            for i, o in enumerate(opts):
                f_ = {"o:" + o}
                f_ |= {w + "|" + o for w in pre}
                f_ |= {"with:" + p + "|" + o for j, p in enumerate(opts) if j != i}
                f_.add(f"n{len(opts)}|{o}")
                feats.append(f_)
            rows.append((r["scene_id"], feats, r["answer_index"]))
    return rows


def fit(train, epochs=60, lr=0.3, l2=1e-3):
    w = {}
    for _ in range(epochs):
        random.shuffle(train)
        for _, feats, ans in train:
            s = [sum(w.get(f, 0.0) for f in fs) for fs in feats]
            m = max(s)
            e = [math.exp(x - m) for x in s]
            z = sum(e)
            for i, fs in enumerate(feats):
                g = (1.0 if i == ans else 0.0) - e[i] / z
                for f in fs:
                    w[f] = w.get(f, 0.0) * (1 - lr * l2) + lr * g
    return w


def predict(w, feats):
    s = [sum(w.get(f, 0.0) for f in fs) for fs in feats]
    return max(range(len(s)), key=lambda i: (s[i], -i))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("release")
    ap.add_argument("--margin", type=float, default=0.05)
    ap.add_argument("--folds", type=int, default=5)
    a = ap.parse_args()
    random.seed(0)
    rows = load(a.release)
    if not rows:
        sys.exit(f"{a.release}: no stsbench rows")
    scenes = sorted({r[0] for r in rows})
    folds = min(a.folds, len(scenes))
    # Few scenes: fold by row instead, as the built-in audit folds by clip.
    by_scene = folds >= 3
    if not by_scene:
        folds = min(a.folds, len(rows))
    right = 0
    chance = 0.0
    for k in range(folds):
        if by_scene:
            held = {s for i, s in enumerate(scenes) if i % folds == k}
            test = [r for r in rows if r[0] in held]
            train = [r for r in rows if r[0] not in held]
        else:
            test = [r for i, r in enumerate(rows) if i % folds == k]
            train = [r for i, r in enumerate(rows) if i % folds != k]
        w = fit(list(train))
        for _, feats, ans in test:
            right += predict(w, feats) == ans
            chance += 1.0 / len(feats)
    acc, ch = right / len(rows), chance / len(rows)
    print(
        f"stsbench: {len(rows)} rows, {len(scenes)} scenes, folds by {'scene' if by_scene else 'row'}: "
        f"question-only {acc:.3f}, chance {ch:.3f}, excess {acc - ch:+.3f}"
    )
    sys.exit(1 if acc - ch > a.margin else 0)


if __name__ == "__main__":
    main()
