"""An independent reading of a drivegen release with pyarrow: every row's key against the
prompt a model reads, ids, image sizes, the control split and the answer letters.

Written apart from drivegen's own validator (no shared code, its own option parsers per
family's published layout). Prints one line per problem and exits 1 if there is any.
usage: release_check.py RELEASE_DIR
"""
import collections
import hashlib
import io
import json
import re
import sys

import pyarrow.parquet as pq
from PIL import Image

# SIG's ordinal labels, as its paper lists them: directions clockwise from behind, distances
# near to far. Their options are shown in this order, so their letters follow the answers and
# are not placed evenly: the order is checked instead of the letters.
DIRECTIONS = ["at the back of", "at the back left of", "at the left of", "at the front left of",
              "at the front of", "at the front right of", "at the right of", "at the back right of"]
DISTANCES = ["adjacent to", "close to", "at a distance from", "far from", "far away from"]
ORDERED = {"directional_mc": DIRECTIONS, "proximal_mc": DISTANCES, "proximal_fill": DISTANCES}


def in_order(typ, ch):
    """Whether a SIG row's options keep their order (directions: a clockwise run)."""
    if typ == "directional_fill":
        labels, circle = DIRECTIONS, True
    elif typ in ORDERED:
        labels, circle = ORDERED[typ], typ.startswith("directional")
    else:
        return True
    if any(c not in labels for c in ch):
        return False
    ids = [labels.index(c) for c in ch]
    if circle:
        return all(b == (a + 1) % len(labels) for a, b in zip(ids, ids[1:]))
    return ids == sorted(ids)


root = sys.argv[1]
manifest = json.load(open(f"{root}/manifest.json"))
problems = []


def options(family, q):
    if family == "egodyn":
        line = [l for l in q.split("\n") if l.endswith("]")][0]
        return line[line.rindex(" [") + 2 : -1].split(" / ")
    if family == "metavqa":
        m = re.search(r": \(A\) (.*)\.$", q, re.S)
        return re.split(r"; \([B-Z]\) ", m.group(1))
    if family in ("stsbench", "sig"):
        out = []
        for l in q.split("\n"):
            m = re.match(r"^([A-Z])\. (.*)$", l)
            if m and ord(m.group(1)) - 65 == len(out):
                out.append(m.group(2)[:-1] if family == "stsbench" else m.group(2))
        return out
    if family == "drivebench":
        body = q[q.rindex("following options: A. ") + len("following options: A. ") : -1]
        return re.split(r"\. [B-Z]\. ", body)
    raise ValueError(family)


rows = {}
letters = collections.defaultdict(collections.Counter)
for shard in manifest["shards"]:
    path = f"{root}/{shard['path']}"
    data = open(path, "rb").read()
    if hashlib.sha256(data).hexdigest() != shard["sha256"]:
        problems.append(f"{shard['path']}: sha256 differs from the manifest")
    m = re.fullmatch(r"data/(\w+?)(?:-([a-z]\w*))?-\d{5}-of-\d{5}\.parquet", shard["path"])
    if not m:
        problems.append(f"{shard['path']}: not a shard name")
        continue
    split, family = m.group(1), m.group(2)
    t = pq.read_table(path)
    if t.num_rows != shard["rows"]:
        problems.append(f"{shard['path']}: {t.num_rows} rows, manifest {shard['rows']}")
    for r in t.to_pylist():
        if r["family"] != family:
            problems.append(f"{r['qa_id']}: a {r['family']} row in {shard['path']}")
        key = (split, r["qa_id"])
        if key in rows:
            problems.append(f"{r['qa_id']}: twice in {split}")
        ch, i = r["choices"], r["answer_index"]
        if ch.count(r["answer"]) != 1 or ch[i] != r["answer"] or r["answer_letter"] != chr(65 + i):
            problems.append(f"{r['qa_id']}: key {i}/{r['answer_letter']}/{r['answer']!r} vs {ch}")
        try:
            shown = options(r["family"], r["question"])
        except Exception as e:  # noqa: BLE001 - any failure to parse is a problem to report
            shown = f"unparsable: {e}"
        if shown != ch:
            problems.append(f"{r['qa_id']} ({r['family']}): prompt shows {shown}, choices {ch}")
        sizes = []
        for k, im in enumerate(r["images"]):
            img = Image.open(io.BytesIO(im["bytes"]))
            img.load()
            sizes.append(img.size)
            if img.size != (r["image_widths"][k], r["image_heights"][k]):
                problems.append(f"{r['qa_id']}: image {k} is {img.size}")
            if split.endswith("_text_only") and max(img.convert("L").getextrema()) > 8:
                problems.append(f"{r['qa_id']}: control image {k} is not black")
        if len(r["images"]) != len(r["cameras"]) or len(r["cameras"]) != len(r["camera_frame_ids"]):
            problems.append(f"{r['qa_id']}: images/cameras/ids do not line up")
        rows[key] = (r["question"], tuple(ch), i, tuple(sizes))
        fixed = r["family"] == "sig" and r["question_type"] in ORDERED
        if r["family"] == "sig" and not in_order(r["question_type"], ch):
            problems.append(f"{r['qa_id']}: options {ch} are out of order")
        # A robustness split repeats its clean rows' letters; only the main split is balanced.
        if split == manifest["split"] and not fixed:
            letters[(r["family"], r["question_type"], len(ch))][i] += 1

main = manifest["split"]
for (split, qid), v in rows.items():
    if split.endswith("_text_only") and rows.get((main, qid)) != v:
        problems.append(f"{qid}: the control differs from its question")
n_main = sum(1 for s, _ in rows if s == main)
if n_main != manifest["rows"]:
    problems.append(f"{n_main} rows in {main}, manifest {manifest['rows']}")
family_letters = collections.defaultdict(collections.Counter)
for (fam, typ, n), c in letters.items():
    counts = [c[k] for k in range(n)]
    if max(counts) - min(counts) > 1:
        problems.append(f"{fam}/{typ}: letters {counts}")
    for k in range(n):
        family_letters[(fam, n)][k] += c[k]
for (fam, n), c in family_letters.items():
    counts = [c[k] for k in range(n)]
    if max(counts) - min(counts) > 1:
        problems.append(f"{fam} ({n} options): letters {counts}")

for p in problems[:50]:
    print(p)
print(f"{len(rows)} rows checked, {len(problems)} problems")
sys.exit(1 if problems else 0)
