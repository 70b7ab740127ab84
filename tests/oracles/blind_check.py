"""Blind baselines of a drivegen release, measured apart from `drivegen audit`.

Reads the release's Parquet shards with pyarrow and, per family, scores three models that
never see an image, each fitted on some folds and scored on the held-out one:

- letter prior: the answer letter most often right in the fitting folds;
- answer prior per template: the template is the question stem with its digits masked; of the
  offered options, the one most often right for that template (then for the family);
- question only: a conditional logit over the offered options whose features are each
  option's text (digits masked) alone, crossed with the words of everything the model reads
  before the options (preamble and stem), crossed with its position, and crossed with the
  other options offered, fitted by L-BFGS with an L2 penalty.

Folds are scenes (as many as there are, up to --folds) when the release has three or more;
with one or two, clips, or keyframes for a question about one frame, so that a question's
near-duplicates stay in its fold. Units go to folds round-robin in sorted order. Only the clean questions are audited (a
robustness split asks the same questions again under corruptions and without images).

usage: blind_check.py RELEASE [--margin 0.05] [--folds 5] [--families a,b] [--json FILE]
                      [--sampling-error Z]
Prints a table; exits 1 when a family's best baseline beats chance by more than the margin, or
with --sampling-error by more than the margin plus Z standard errors of an accuracy at chance
on that many rows (a family of 24 rows cannot be told from chance to within 0.05).
"""

import argparse
import glob
import json
import math
import os
import re
import sys
from collections import Counter, defaultdict

import numpy as np
import pyarrow.parquet as pq
import scipy.optimize
import scipy.sparse

COLUMNS = [
    "qa_id", "family", "scene_id", "clip_id", "frame_idx", "prompt_preamble", "prompt_stem",
    "choices", "answer_index",
]


def mask(text):
    return re.sub(r"\d", "#", text.lower())


def words(text):
    return {w for w in re.findall(r"[a-z_]+", (text or "").lower())}


def load(release, families):
    rows, seen = [], set()
    files = sorted(glob.glob(os.path.join(release, "data", "**", "*.parquet"), recursive=True))
    if not files:
        sys.exit(f"{release}: no Parquet shards under data/")
    for f in files:
        names = pq.read_schema(f).names
        cols = [c for c in COLUMNS + ["setting"] if c in names]
        for r in pq.read_table(f, columns=cols).to_pylist():
            if r.get("setting") not in (None, "", "clean"):
                continue
            if families and r["family"] not in families:
                continue
            choices = r["choices"]
            if isinstance(choices, str):
                choices = json.loads(choices)
            if not choices or r["qa_id"] in seen:
                continue
            seen.add(r["qa_id"])
            if r["clip_id"]:
                unit = f"clip/{r['scene_id']}/{r['clip_id']}"
            elif r["frame_idx"] is not None:
                unit = f"frame/{r['scene_id']}/{r['frame_idx']}"
            else:
                unit = f"scene/{r['scene_id']}"
            rows.append({
                "family": r["family"],
                "scene": r["scene_id"],
                "unit": unit,
                "template": mask(r["prompt_stem"] or ""),
                "context": words((r["prompt_preamble"] or "") + " " + (r["prompt_stem"] or "")),
                "options": [mask(c) for c in choices],
                "answer": int(r["answer_index"]),
            })
    return rows


def folds_of(rows, want):
    scenes = sorted({r["scene"] for r in rows})
    if len(scenes) >= 3:
        key, grouping = "scene", "scene"
    else:
        key, grouping = "unit", "clip or keyframe"
    units = sorted({r[key] for r in rows})
    n = min(want, len(units))
    fold = {u: i % n for i, u in enumerate(units)}
    return [fold[r[key]] for r in rows], n, grouping


def letter_prior(train, test):
    c = Counter(r["answer"] for r in train)
    best = max(sorted(c), key=lambda k: c[k]) if c else 0
    return [best for _ in test]


def template_prior(train, test):
    by_t, overall = defaultdict(Counter), Counter()
    for r in train:
        a = r["options"][r["answer"]]
        by_t[r["template"]][a] += 1
        overall[a] += 1
    out = []
    for r in test:
        t = by_t.get(r["template"], Counter())
        scores = [(t[o], overall[o]) for o in r["options"]]
        out.append(max(range(len(scores)), key=lambda i: (scores[i], -i)))
    return out


def features(r, i):
    o = r["options"][i]
    f = ["o:" + o, f"p{i}|{o}", f"p{i}"]
    f += [f"w:{w}|{o}" for w in r["context"]]
    f += [f"with:{p}|{o}" for j, p in enumerate(r["options"]) if j != i]
    return f


def design(rows, index, grow):
    data_rows, cols, starts, n = [], [], [], 0
    for r in rows:
        starts.append(n)
        for i in range(len(r["options"])):
            for f in features(r, i):
                k = index.get(f)
                if k is None and grow:
                    k = index[f] = len(index)
                if k is not None:
                    data_rows.append(n)
                    cols.append(k)
            n += 1
    x = scipy.sparse.csr_matrix(
        (np.ones(len(cols)), (np.array(data_rows, dtype=np.int64), np.array(cols, dtype=np.int64))),
        shape=(n, max(len(index), 1)),
    )
    return x, np.array(starts, dtype=np.int64)


def question_only(train, test, l2=1.0):
    index = {}
    x, starts = design(train, index, grow=True)
    counts = np.diff(np.append(starts, x.shape[0]))
    group = np.repeat(np.arange(len(starts)), counts)
    right = starts + np.array([r["answer"] for r in train], dtype=np.int64)

    def loss(w):
        s = x @ w
        top = np.maximum.reduceat(s, starts)
        e = np.exp(s - top[group])
        z = np.add.reduceat(e, starts)
        lse = np.log(z) + top
        p = e / z[group]
        p[right] -= 1.0
        value = float(np.sum(lse - s[right]) + 0.5 * l2 * w @ w)
        return value, x.T @ p + l2 * w

    w0 = np.zeros(x.shape[1])
    w = scipy.optimize.minimize(loss, w0, jac=True, method="L-BFGS-B",
                                options={"maxiter": 300}).x
    xt, st = design(test, index, grow=False)
    s = xt @ w
    out = []
    for k, r in enumerate(test):
        seg = s[st[k]:st[k] + len(r["options"])]
        out.append(int(np.argmax(seg)))
    return out


def audit(rows, want):
    fold, n, grouping = folds_of(rows, want)
    right = np.zeros((3, len(rows)), dtype=bool)
    if n < 2:
        return None, n, grouping
    for k in range(n):
        train = [r for r, f in zip(rows, fold) if f != k]
        held = [i for i, f in enumerate(fold) if f == k]
        test = [rows[i] for i in held]
        for b, model in enumerate((letter_prior, template_prior, question_only)):
            for i, guess in zip(held, model(train, test)):
                right[b, i] = guess == rows[i]["answer"]
    return right.mean(axis=1), n, grouping


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("release")
    ap.add_argument("--margin", type=float, default=0.05)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--families", default="")
    ap.add_argument("--json")
    ap.add_argument("--sampling-error", type=float, default=0.0)
    a = ap.parse_args()
    wanted = {f for f in a.families.split(",") if f}
    rows = load(a.release, wanted)
    by_family = defaultdict(list)
    for r in rows:
        by_family[r["family"]].append(r)
    missing = sorted(wanted - set(by_family))
    report, over = {}, []
    print("| family | rows | folds | chance | letter prior | answer prior per template "
          "| question only | excess | standard error |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for family in sorted(by_family):
        fr = by_family[family]
        chance = float(np.mean([1.0 / len(r["options"]) for r in fr]))
        acc, n, grouping = audit(fr, a.folds)
        if acc is None:
            print(f"| {family} | {len(fr)} | {n} of {grouping} | {chance:.3f} | – | – | – | – | – |")
            report[family] = {"rows": len(fr), "folds": n, "grouping": grouping}
            continue
        excess = float(acc.max() - chance)
        se = math.sqrt(chance * (1.0 - chance) / len(fr))
        report[family] = {
            "rows": len(fr), "folds": n, "grouping": grouping, "chance": chance,
            "letter_prior": float(acc[0]), "template_prior": float(acc[1]),
            "question_only": float(acc[2]), "excess": excess,
            "standard_error": se,
        }
        print(f"| {family} | {len(fr)} | {n} of {grouping} | {chance:.3f} | {acc[0]:.3f} "
              f"| {acc[1]:.3f} | {acc[2]:.3f} | {excess:+.3f} | {se:.3f} |")
        if excess > a.margin + a.sampling_error * se:
            over.append(family)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
    if missing:
        print(f"no rows for: {', '.join(missing)}")
    if over:
        print(f"over the margin of {a.margin}: {', '.join(over)}")
    print(f"blind_check: {len(by_family)} families, {len(over) + len(missing)} problems")
    sys.exit(1 if over or missing else 0)


if __name__ == "__main__":
    main()
