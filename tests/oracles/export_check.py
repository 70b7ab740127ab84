"""Loads `drivegen export` outputs the way their harnesses do and checks them against the
release, read independently with pyarrow.

    export_check.py RELEASE FORMAT EXPORT_DIR

LLaVA: `json.load` of each split's list; every item has `id` and alternating human/gpt turns,
as many `<image>` tokens as images (LLaVA-NeXT consumes one image per token and does not check),
each image file opens with PIL and holds the release's bytes, the reply is the release's answer.
VLMEvalKit: `pandas.read_csv(sep="\\t")` as its `load()` does; the option columns that are not
NaN are the release's choices in order, `answer` its letter, images base64 (a list as text when
several, parsed with `ast.literal_eval` like its `toliststr`) decoding to the release's bytes.
JSONL: one object per line, answers and image bytes the release's. Prints one summary line;
exits 1 naming the first problems.
"""

import ast
import base64
import glob
import hashlib
import io
import json
import os
import string
import sys

import pyarrow.parquet as pq
from PIL import Image


def release_rows(rel):
    rows = {}
    for path in sorted(glob.glob(os.path.join(rel, "data", "*.parquet"))):
        for r in pq.read_table(path).to_pylist():
            rows[r["qa_id"], split_of(path)] = r
    return rows


def split_of(path):
    # drivegen refuses split names with `-`, so the split is what comes before the first one.
    name = os.path.basename(path)
    return name.split("-", 1)[0]


def digest(b):
    return hashlib.sha256(b).hexdigest()


def opens(b):
    Image.open(io.BytesIO(b)).load()


def main():
    rel, fmt, out = sys.argv[1:4]
    rows = release_rows(rel)
    problems = []
    seen = set()

    def check_images(key, got):
        want = [i["bytes"] for i in rows[key]["images"]]
        if len(got) != len(want):
            problems.append(f"{key}: {len(got)} images, the release shows {len(want)}")
            return
        for k, (g, w) in enumerate(zip(got, want)):
            if digest(g) != digest(w):
                problems.append(f"{key}: image {k} is not the release's")
            else:
                opens(g)

    if fmt == "llava":
        for path in sorted(glob.glob(os.path.join(out, "*.json"))):
            split = os.path.basename(path)[: -len(".json")]
            for item in json.load(open(path)):
                key = (item["id"], split)
                seen.add(key)
                r = rows[key]
                turns = item["conversations"]
                if [t["from"] for t in turns] != ["human", "gpt"]:
                    problems.append(f"{key}: turns {[t['from'] for t in turns]}")
                imgs = item.get("image", [])
                imgs = [imgs] if isinstance(imgs, str) else imgs
                if turns[0]["value"].count("<image>") != len(imgs):
                    problems.append(f"{key}: {turns[0]['value'].count('<image>')} <image> tokens, {len(imgs)} images")
                if not turns[0]["value"].endswith(r["question"]):
                    problems.append(f"{key}: the prompt is not the release's question")
                want = r["answer"] if r["prompt_layout"] == "egodyn" else r["answer_letter"]
                if turns[1]["value"] != want:
                    problems.append(f"{key}: reply {turns[1]['value']!r}, the release's answer {want!r}")
                check_images(key, [open(os.path.join(out, p), "rb").read() for p in imgs])
    elif fmt == "vlmevalkit":
        import pandas as pd

        (path,) = glob.glob(os.path.join(out, "*.tsv"))
        df = pd.read_csv(path, sep="\t")
        if not df["index"].is_unique:
            problems.append("index is not unique")
        for _, row in df.iterrows():
            key = (row["qa_id"], row["split"])
            seen.add(key)
            r = rows[key]
            options = [row[c] for c in string.ascii_uppercase if c in row and not pd.isna(row[c])]
            if [str(o) for o in options] != r["choices"]:
                problems.append(f"{key}: options {options}, the release's {r['choices']}")
            if row["answer"] != r["answer_letter"]:
                problems.append(f"{key}: answer {row['answer']}, the release's {r['answer_letter']}")
            if row["category"] != f"{r['family']}/{r['question_type']}":
                problems.append(f"{key}: category {row['category']}")
            if r["prompt_stem"] not in row["question"]:
                problems.append(f"{key}: the question does not hold the release's stem")
            cell = row["image"]
            cells = ast.literal_eval(cell) if cell.startswith("[") and cell.endswith("]") else [cell]
            check_images(key, [base64.b64decode(c) for c in cells])
    elif fmt == "jsonl":
        for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
            for line in open(path):
                item = json.loads(line)
                key = (item["qa_id"], item["split"])
                seen.add(key)
                r = rows[key]
                for k in ("question", "choices", "answer_index", "answer_letter", "answer", "rule", "params", "evidence", "source", "scene_id"):
                    if item[k] != r[k]:
                        problems.append(f"{key}: {k} differs from the release")
                check_images(key, [open(os.path.join(out, p), "rb").read() for p in item["images"]])
    else:
        sys.exit(f"unknown format {fmt}")
    missing = set(rows) - seen
    if missing:
        problems.append(f"{len(missing)} release rows not exported, e.g. {sorted(missing)[:3]}")
    print(f"{fmt}: {len(seen)} rows checked, {len(problems)} problems")
    for p in problems[:20]:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
