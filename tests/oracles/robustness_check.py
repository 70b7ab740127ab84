"""An independent reading of a drivegen corruption-robustness release: the robustness splits
against the clean split they re-ask, the corrupted pixels against corruptions written here from
their published definitions, the splits as Hugging Face `datasets` loads them, and, given
predictions, the robustness scores `drivegen score --json` reports.

    robustness_check.py RELEASE [--predictions PRED.jsonl --score SCORE.json]
                        [--config CORRUPTIONS.toml] [--no-hub]

Reads the release only through pyarrow, PIL and `datasets` (offline: the caller sets
HF_DATASETS_OFFLINE=1), and the corruption constants from configs/corruptions.toml. Shares no
code with drivegen. Prints every problem, one per line, naming the split and qa_id, and exits
1 if there is any; otherwise ends with `robustness: N settings, M rows, K pixel images
checked, 0 problems`.
"""
import argparse
import collections
import hashlib
import io
import json
import os
import sys
import tomllib

import numpy as np
import pyarrow.parquet as pq
from PIL import Image

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(REPO, "configs", "corruptions.toml")

# A robustness row must repeat these of its clean row: they are everything a model reads
# besides the images, plus the key it is marked against.
SAME = ["family", "question_type", "question", "choices", "answer_index", "answer_letter",
        "answer", "cameras", "camera_frame_ids", "prompt_layout", "prompt_preamble",
        "prompt_stem", "prompt_postamble", "option_notes"]

# These corrupt only some of a frame's views, so an image of the split may be its clean one.
SELECTIVE = {"water_splash", "lens_obstacle", "camera_crash", "frame_lost"}
BLACKOUT = {"camera_crash", "frame_lost"}

# The expected image goes through the same JPEG writer as the published one, so these only
# need to absorb decoders that differ on the source, float32 against float64 at truncation
# boundaries, and what those small differences become after re-encoding.
MEAN_TOL = 1.5
P99_TOL = 12.0
BLACK = 8
CHANGED = 0.5
PIXEL_IMAGES = 40

problems = []


def problem(msg):
    problems.append(msg)


# ---------------------------------------------------------------- corruptions, from their text

def to_hsv(rgb):
    """RGB in [0, 1] to HSV in [0, 1], with skimage's conventions (grey: H = S = 0)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = rgb.max(axis=-1)
    spread = v - rgb.min(axis=-1)
    grey = spread == 0
    safe = np.where(grey, 1.0, spread)
    s = np.where(grey, 0.0, spread / np.where(v == 0, 1.0, v))
    # skimage assigns red, then green, then blue, the later overwriting: blue wins ties.
    h = np.where(r == v, (g - b) / safe, 0.0)
    h = np.where(g == v, 2.0 + (b - r) / safe, h)
    h = np.where(b == v, 4.0 + (r - g) / safe, h)
    h = np.mod(h / 6.0, 1.0)
    h = np.where(grey, 0.0, h)
    return np.stack([h, s, v], axis=-1)


def from_hsv(hsv):
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    sector = np.floor(h * 6.0)
    f = h * 6.0 - sector
    sector = sector.astype(np.int64) % 6
    p = v * (1.0 - s)
    q = v * (1.0 - f * s)
    t = v * (1.0 - (1.0 - f) * s)
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    out = np.zeros(hsv.shape, dtype=np.float64)
    for k, (a, b, c) in enumerate(table):
        m = sector == k
        out[..., 0] = np.where(m, a, out[..., 0])
        out[..., 1] = np.where(m, b, out[..., 1])
        out[..., 2] = np.where(m, c, out[..., 2])
    return out


def to_uint8(x):
    # Truncation, not rounding: the reference's float-to-uint8 cast.
    return (np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)


def brightness(cfg, sev, img):
    hsv = to_hsv(img.astype(np.float64) / 255.0)
    hsv[..., 2] = np.clip(hsv[..., 2] + cfg["brightness"]["delta_v"][sev - 1], 0.0, 1.0)
    return to_uint8(from_hsv(hsv))


def saturate(cfg, sev, img):
    c = cfg["saturate"]
    hsv = to_hsv(img.astype(np.float64) / 255.0)
    hsv[..., 1] = np.clip(hsv[..., 1] * c["scale"][sev - 1] + c["offset"][sev - 1], 0.0, 1.0)
    return to_uint8(from_hsv(hsv))


def color_quant(cfg, sev, img):
    bits = int(cfg["color_quant"]["bits"][sev - 1])
    keep = (0xFF << (8 - bits)) & 0xFF
    return img & np.uint8(keep)


EXACT = {"brightness": brightness, "saturate": saturate, "color_quant": color_quant}


# ---------------------------------------------------------------- reading the release

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def read_rows(root, manifest):
    """Every row but its image bytes, each with where its images are: split -> [row]."""
    by_split = collections.defaultdict(list)
    for shard in manifest["shards"]:
        path = os.path.join(root, shard["path"])
        if not os.path.exists(path):
            problem(f"{shard['path']}: listed in the manifest, missing")
            continue
        if sha256(path) != shard["sha256"]:
            problem(f"{shard['path']}: sha256 differs from the manifest")
        pf = pq.ParquetFile(path)
        names = [c for c in pf.schema_arrow.names if c != "images"]
        for col in ("setting", "base_qa_id", "corruption_seed", "images"):
            if col not in pf.schema_arrow.names:
                problem(f"{shard['path']}: no column {col}")
        split = split_of(shard["path"], manifest["splits"])
        if split is None:
            problem(f"{shard['path']}: names no split of the manifest")
            continue
        n = 0
        for g in range(pf.num_row_groups):
            t = pf.read_row_group(g, columns=names)
            # The published path of each image, without its bytes: a clean row built from a
            # store's cameras may leave `image_paths` empty and name its images only here.
            shown = pf.read_row_group(g, columns=["images.list.item.path"]).column(0).to_pylist()
            for i, r in enumerate(t.to_pylist()):
                r["_shown"] = [im["path"] for im in shown[i] or []]
                r["_at"] = (path, g, i)
                r["_split"] = split
                by_split[split].append(r)
                n += 1
        if n != shard["rows"]:
            problem(f"{shard['path']}: {n} rows, the manifest says {shard['rows']}")
    return by_split


def split_of(path, splits):
    """The split a shard's name gives: the longest manifest split its file name starts with."""
    name = os.path.basename(path)
    hits = [s for s in splits if name.startswith(s + "-")]
    return max(hits, key=len) if hits else None


class Images:
    """Image bytes, read a row group at a time only for the rows that are asked for."""

    def __init__(self):
        self.cache = {}

    def load(self, wanted):
        """wanted: iterable of (path, group, index); keeps those rows' image lists."""
        groups = collections.defaultdict(set)
        for path, g, i in wanted:
            if (path, g, i) not in self.cache:
                groups[(path, g)].add(i)
        for (path, g), idx in sorted(groups.items()):
            col = pq.ParquetFile(path).read_row_group(g, columns=["images"]).column("images")
            for i in idx:
                self.cache[(path, g, i)] = [im["bytes"] for im in col[i].as_py()]

    def get(self, at):
        return self.cache[at]

    def drop(self):
        self.cache = {}


def each_row_images(rows):
    """(row, its image bytes) for every row, reading one row group at a time."""
    groups = collections.defaultdict(list)
    for r in rows:
        groups[r["_at"][:2]].append(r)
    for (path, g), rs in sorted(groups.items()):
        col = pq.ParquetFile(path).read_row_group(g, columns=["images"]).column("images")
        for r in rs:
            yield r, [im["bytes"] for im in col[r["_at"][2]].as_py()]


def decode(data):
    img = Image.open(io.BytesIO(data))
    fmt = img.format
    img.load()
    return np.asarray(img.convert("RGB")), fmt


def like_published(img, fmt, quality):
    """`img` as the release would hold it: through Pillow's JPEG writer (libjpeg-turbo, 4:2:0,
    the writer drivegen's encoder is documented to match) when the published image is a
    JPEG, so what is left of a difference is the corruption's, not the codec's."""
    if fmt != "JPEG":
        return img
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality, subsampling="4:2:0")
    return decode(buf.getvalue())[0]


def header(data):
    img = Image.open(io.BytesIO(data))
    return img.size, img.format


# ---------------------------------------------------------------- 1. rows

def check_rows(manifest, by_split):
    rob = manifest["robustness"]
    main = manifest["split"]
    control = rob.get("text_only_split")
    if rob.get("clean_split") != main:
        problem(f"manifest: robustness.clean_split {rob.get('clean_split')!r}, split {main!r}")
    families = rob["families"]
    settings = rob["settings"]
    clean = {r["qa_id"]: r for r in by_split.get(main, [])}
    if len(clean) != len(by_split.get(main, [])):
        problem(f"{main}: qa_ids repeat")

    for split in manifest["splits"]:
        want = manifest["split_counts"].get(split)
        if want is None:
            problem(f"manifest: no split_counts for {split}")
            continue
        got = collections.Counter(r["family"] for r in by_split.get(split, []))
        for fam in sorted(set(want) | set(got)):
            if got.get(fam, 0) != want.get(fam, 0):
                problem(f"{split}/{fam}: {got.get(fam, 0)} rows, split_counts says {want.get(fam, 0)}")
    if main in manifest["split_counts"]:
        for fam, types in manifest["counts"].items():
            if sum(types.values()) != manifest["split_counts"][main].get(fam, 0):
                problem(f"manifest: counts and split_counts differ for {main}/{fam}")

    for r in by_split.get(main, []):
        if r["setting"] != "clean" or r["base_qa_id"] != r["qa_id"] or r["corruption_seed"] is not None:
            problem(f"{main}/{r['qa_id']}: setting {r['setting']!r}, base {r['base_qa_id']!r}, "
                    f"corruption_seed {r['corruption_seed']!r}")
    if control:
        if control not in manifest["splits"]:
            problem(f"manifest: text-only split {control} not among the splits")
        for r in by_split.get(control, []):
            q = r["qa_id"]
            if r["setting"] != "text_only" or r["base_qa_id"] != q or r["corruption_seed"] is not None:
                problem(f"{control}/{q}: setting {r['setting']!r}, base {r['base_qa_id']!r}, "
                        f"corruption_seed {r['corruption_seed']!r}")
            if q not in clean:
                problem(f"{control}/{q}: not a qa_id of {main}")

    # qa_ids are unique over the release; only the control repeats the main split's.
    seen = {}
    for split, rows in by_split.items():
        if split == control:
            continue
        for r in rows:
            if r["qa_id"] in seen:
                problem(f"{split}/{r['qa_id']}: qa_id also in {seen[r['qa_id']]}")
            seen[r["qa_id"]] = split

    splits_named = set()
    base_sets = {}
    for s in settings:
        split = s["split"]
        splits_named.add(split)
        if split not in manifest["splits"]:
            problem(f"manifest: robustness split {split} not among the splits")
        if s["seed"] != rob["seed"]:
            problem(f"manifest: {split} seed {s['seed']}, robustness seed {rob['seed']}")
        if bool(s["blackout"]) != (s["corruption"] in BLACKOUT):
            problem(f"manifest: {split} blackout {s['blackout']} for {s['corruption']}")
        rows = by_split.get(split, [])
        for r in rows:
            q = r["qa_id"]
            where = f"{split}/{q}"
            if r["family"] not in families:
                problem(f"{where}: family {r['family']} is not re-asked")
            if r["setting"] != s["setting"]:
                problem(f"{where}: setting {r['setting']!r}, want {s['setting']!r}")
            if r["corruption"] != s["corruption"] or r["severity"] != s["severity"]:
                problem(f"{where}: corruption {r['corruption']!r}/{r['severity']!r}, "
                        f"want {s['corruption']}/{s['severity']}")
            if r["corruption_seed"] != s["seed"]:
                problem(f"{where}: corruption_seed {r['corruption_seed']!r}, want {s['seed']}")
            base = clean.get(r["base_qa_id"])
            if base is None:
                problem(f"{where}: base_qa_id {r['base_qa_id']!r} is not in {main}")
                continue
            if q == r["base_qa_id"]:
                problem(f"{where}: qa_id equals its base_qa_id")
            for col in SAME:
                if r.get(col) != base.get(col):
                    problem(f"{where}: {col} {str(r.get(col))[:80]!r} differs from "
                            f"{main}/{base['qa_id']}'s {str(base.get(col))[:80]!r}")
            want_paths = [f"{s['corruption']}/{s['severity']}/{p}" for p in base["_shown"]]
            if r["image_paths"] != want_paths:
                problem(f"{where}: image_paths {r['image_paths']}, want {want_paths}")
            if r["_shown"] != r["image_paths"]:
                problem(f"{where}: images' paths {r['_shown']}, image_paths {r['image_paths']}")
            if r["image_widths"] != base["image_widths"] or r["image_heights"] != base["image_heights"]:
                problem(f"{where}: recorded image sizes differ from {main}/{base['qa_id']}'s")
        per_fam = collections.defaultdict(list)
        for r in rows:
            per_fam[r["family"]].append(r["base_qa_id"])
        for fam, bases in per_fam.items():
            if len(set(bases)) != len(bases):
                problem(f"{split}/{fam}: a base row is asked twice")
            if len(bases) > rob["rows_per_family"]:
                problem(f"{split}/{fam}: {len(bases)} rows, rows_per_family {rob['rows_per_family']}")
        for fam in families:
            b = frozenset(per_fam.get(fam, []))
            if fam in base_sets and base_sets[fam][1] != b:
                other = base_sets[fam][0]
                diff = sorted(b ^ base_sets[fam][1])[:5]
                problem(f"{split}/{fam}: re-asks other rows than {other} (e.g. {diff})")
            base_sets.setdefault(fam, (split, b))
    for split in manifest["splits"]:
        if split not in splits_named and split not in (main, control):
            problem(f"manifest: split {split} is neither clean, control nor a robustness setting")
    return {fam: v[1] for fam, v in base_sets.items()}


# ---------------------------------------------------------------- 2. pixels

def marked(row):
    """Whether a row's images carry Set-of-Mark labels (`marks` is a JSON object, `{}` if not)."""
    m = row.get("marks")
    if isinstance(m, str):
        try:
            m = json.loads(m) if m.strip() else None
        except ValueError:
            return True
    return bool(m)


def sample(rows, families, clean):
    """Up to PIXEL_IMAGES (row, k) of a split, lowest qa_ids first, an even share per family
    and then whatever is left over in order. Set-of-Mark drawings (PNG, with marks) are left
    out: their marks are drawn after the corruption."""
    fams = sorted({r["family"] for r in rows} & set(families))
    if not fams:
        return []
    candidates = collections.defaultdict(list)
    for r in sorted(rows, key=lambda r: r["qa_id"]):
        base = clean.get(r["base_qa_id"])
        if base is None or r["family"] not in fams:
            continue
        # A row whose images do not line up with its clean row's is already a problem.
        for k in range(min(len(r["_shown"]), len(base["_shown"]))):
            if (base["_shown"][k] or "").lower().endswith(".png") and marked(base):
                continue
            candidates[r["family"]].append((r, k))
    quota = max(1, PIXEL_IMAGES // len(fams))
    out = [c for fam in fams for c in candidates[fam][:quota]][:PIXEL_IMAGES]
    rest = [c for fam in fams for c in candidates[fam][quota:]]
    return out + rest[: PIXEL_IMAGES - len(out)]


def check_pixels(manifest, by_split, cfg, stats):
    rob = manifest["robustness"]
    main = manifest["split"]
    clean = {r["qa_id"]: r for r in by_split.get(main, [])}
    images = Images()
    quality = int(cfg["output"]["jpeg_quality"])
    checked = 0
    for s in rob["settings"]:
        split, corr, sev = s["split"], s["corruption"], s["severity"]
        rows = by_split.get(split, [])
        # Every image of the split: it opens far enough to give its size, the recorded one.
        n_images = 0
        for r, data in each_row_images(rows):
            n_images += len(data)
            base = clean.get(r["base_qa_id"])
            if base is not None and len(data) != len(base["_shown"]):
                problem(f"{split}/{r['qa_id']}: {len(data)} images, its clean row {len(base['_shown'])}")
                continue
            for k, d in enumerate(data):
                try:
                    size, _ = header(d)
                except Exception as e:  # noqa: BLE001 - any unreadable image is the problem
                    problem(f"{split}/{r['qa_id']}: image {k} does not open: {e}")
                    continue
                if k >= min(len(r["image_widths"]), len(r["image_heights"])):
                    problem(f"{split}/{r['qa_id']}: image {k} has no recorded size")
                elif size != (r["image_widths"][k], r["image_heights"][k]):
                    problem(f"{split}/{r['qa_id']}: image {k} is {size}, recorded "
                            f"{(r['image_widths'][k], r['image_heights'][k])}")
        stats[split] = {"rows": len(rows), "images": n_images}

        picked = sample(rows, rob["families"], clean)
        images.load(r["_at"] for r, _ in picked)
        images.load(clean[r["base_qa_id"]]["_at"] for r, _ in picked)
        diffs = []
        black = kept = 0
        worst = (0.0, 0.0)
        for r, k in picked:
            where = f"{split}/{r['qa_id']} image {k}"
            base = clean[r["base_qa_id"]]
            try:
                got, fmt = decode(images.get(r["_at"])[k])
                src, _ = decode(images.get(base["_at"])[k])
            except Exception as e:  # noqa: BLE001
                problem(f"{where}: does not decode: {e}")
                continue
            checked += 1
            if got.shape != src.shape:
                problem(f"{where}: {got.shape} against the clean {src.shape}")
                continue
            if corr in BLACKOUT:
                if int(got.max()) <= BLACK:
                    black += 1
                    continue
                kept += 1
                want = src
            elif corr in EXACT:
                want = EXACT[corr](cfg, sev, src)
            else:
                diffs.append(float(np.abs(got.astype(np.int16) - src.astype(np.int16)).mean()))
                continue
            err = np.abs(got.astype(np.int16) - like_published(want, fmt, quality).astype(np.int16))
            mean, p99 = float(err.mean()), float(np.percentile(err, 99))
            worst = (max(worst[0], mean), max(worst[1], p99))
            if mean > MEAN_TOL or p99 > P99_TOL:
                what = "neither black nor its clean image" if corr in BLACKOUT else f"not {corr} {sev} of its clean image"
                problem(f"{where}: {what} (mean abs diff {mean:.2f}, p99 {p99:.0f})")
        if corr in BLACKOUT:
            stats[split]["pixels"] = (f"{len(picked)} compared: {black} black, {kept} unchanged "
                                      f"(worst mean {worst[0]:.2f}, p99 {worst[1]:.0f})")
        elif corr in EXACT:
            stats[split]["pixels"] = (f"{len(picked)} compared with {corr} here "
                                      f"(worst mean {worst[0]:.2f}, p99 {worst[1]:.0f})")
        else:
            changed = sum(d > CHANGED for d in diffs)
            stats[split]["pixels"] = f"{changed}/{len(diffs)} changed"
            if corr not in SELECTIVE and diffs and changed < 0.9 * len(diffs):
                problem(f"{split}: only {changed} of {len(diffs)} sampled images differ from "
                        f"their clean image by more than {CHANGED} grey levels")
        images.drop()
    return checked


# ---------------------------------------------------------------- 3. Hugging Face datasets

def check_hub(root, manifest):
    from datasets import load_dataset

    rob = manifest["robustness"]
    counts = manifest["split_counts"]
    loaded = 0
    for s in rob["settings"]:
        split = s["split"]
        for config in list(rob["families"]) + [None]:
            name = config or "default"
            want = sum(counts.get(split, {}).values()) if config is None else counts.get(split, {}).get(config, 0)
            if want == 0:
                # The card leaves a split out of a config that has no rows in it.
                continue
            try:
                d = load_dataset(root, config, split=split) if config else load_dataset(root, split=split)
            except Exception as e:  # noqa: BLE001 - a load that fails is what is checked
                problem(f"datasets {name}/{split}: {type(e).__name__}: {str(e)[:200]}")
                continue
            if len(d) != want:
                problem(f"datasets {name}/{split}: {len(d)} rows, split_counts says {want}")
            if config and len(d) and set(d.unique("family")) != {config}:
                problem(f"datasets {name}/{split}: families {sorted(set(d.unique('family')))}")
            if len(d):
                ex = d[0]
                img = ex["images"][0] if ex["images"] else None
                size = (ex["image_widths"][0], ex["image_heights"][0]) if ex["image_widths"] else None
                if img is not None and (not hasattr(img, "size") or img.size != size):
                    problem(f"datasets {name}/{split}/{ex['qa_id']}: first image {str(img)[:80]}, recorded {size}")
                if ex["setting"] != s["setting"]:
                    problem(f"datasets {name}/{split}/{ex['qa_id']}: setting {ex['setting']!r}")
            loaded += len(d)
    return loaded


# ---------------------------------------------------------------- 4. scores

# Where the score JSON keeps what is compared: change these if its shape moves.
def score_families(score):
    return score.get("robustness") or {}


def metric_value(m):
    if m is None:
        return None
    return m.get("value") if isinstance(m, dict) else m


def metric_interval(m):
    return (m.get("lo"), m.get("hi")) if isinstance(m, dict) else (None, None)


def block_metrics(block):
    """(name, metric, is an accuracy) of one family's (or one type's) block."""
    out = [("clean", block.get("clean"), True), ("text_only", block.get("text_only"), True),
           ("visual_reliance", block.get("visual_reliance"), False),
           ("mrr", block.get("mrr"), False),
           ("mrr_without_blackout", block.get("mrr_without_blackout"), False)]
    for name, st in (block.get("settings") or {}).items():
        out.append((f"settings.{name}.accuracy", st.get("accuracy"), True))
        out.append((f"settings.{name}.rr", st.get("rr"), False))
    return out


def correct(pred, row):
    if pred is None:
        return False
    p = str(pred).strip().lower()
    return p == row["answer_letter"].strip().lower() or p == str(row["answer"]).strip().lower()


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def expected_block(rows_by_split, preds, manifest, bases):
    """The robustness numbers of the rows whose base is in `bases`."""
    rob = manifest["robustness"]
    main, control = manifest["split"], rob.get("text_only_split")

    def acc(split):
        rows = [r for r in rows_by_split.get(split, []) if r["base_qa_id"] in bases]
        return mean([correct(preds.get((split, r["qa_id"])), r) for r in rows]), len(rows)

    clean, n = acc(main)
    out = {"rows": n, "clean": clean, "settings": {}}
    if control:
        t, _ = acc(control)
        out["text_only"] = t
        out["visual_reliance"] = None if clean is None or t is None else clean - t
    else:
        out["text_only"] = out["visual_reliance"] = None
    rrs, rrs_kept = [], []
    for s in rob["settings"]:
        a, _ = acc(s["split"])
        rr = None if not clean or a is None else a / clean
        out["settings"][s["setting"]] = {"split": s["split"], "corruption": s["corruption"],
                                         "severity": s["severity"], "blackout": bool(s["blackout"]),
                                         "accuracy": a, "rr": rr}
        if rr is not None:
            rrs.append(rr)
            if not s["blackout"]:
                rrs_kept.append(rr)
    out["mrr"] = mean(rrs) if len(rrs) == len(rob["settings"]) else None
    n_kept = sum(1 for s in rob["settings"] if not s["blackout"])
    out["mrr_without_blackout"] = mean(rrs_kept) if n_kept and len(rrs_kept) == n_kept else None
    return out


def compare_block(where, want, got):
    if not isinstance(got, dict):
        problem(f"score {where}: missing")
        return
    if got.get("rows") != want["rows"]:
        problem(f"score {where}.rows: {got.get('rows')}, expected {want['rows']}")
    want_metrics = {"clean": want["clean"], "text_only": want["text_only"],
                    "visual_reliance": want["visual_reliance"], "mrr": want["mrr"],
                    "mrr_without_blackout": want["mrr_without_blackout"]}
    for name, st in want["settings"].items():
        want_metrics[f"settings.{name}.accuracy"] = st["accuracy"]
        want_metrics[f"settings.{name}.rr"] = st["rr"]
        g = (got.get("settings") or {}).get(name)
        if not isinstance(g, dict):
            problem(f"score {where}.settings.{name}: missing")
            continue
        for key in ("split", "corruption", "severity", "blackout"):
            if g.get(key) != st[key]:
                problem(f"score {where}.settings.{name}.{key}: {g.get(key)!r}, expected {st[key]!r}")
    extra = set(got.get("settings") or {}) - set(want["settings"])
    if extra:
        problem(f"score {where}.settings: unexpected {sorted(extra)}")
    seen = {name: (m, is_acc) for name, m, is_acc in block_metrics(got)}
    for name, w in want_metrics.items():
        m, is_acc = seen.get(name, (None, False))
        v = metric_value(m)
        if w is None or v is None:
            if (w is None) != (v is None):
                problem(f"score {where}.{name}: {v!r}, expected {w!r}")
            continue
        if abs(v - w) > 1e-9:
            problem(f"score {where}.{name}: {v!r}, expected {w!r}")
        lo, hi = metric_interval(m)
        if lo is None or hi is None:
            problem(f"score {where}.{name}: no interval")
            continue
        if not (lo - 1e-12 <= v <= hi + 1e-12):
            problem(f"score {where}.{name}: value {v} outside [{lo}, {hi}]")
        if is_acc and not (-1e-12 <= lo and hi <= 1 + 1e-12):
            problem(f"score {where}.{name}: interval [{lo}, {hi}] outside [0, 1]")


def check_score(manifest, by_split, bases, pred_path, score_path):
    # A prediction naming no split answers the main split's row of that id, else the one
    # robustness row that has it (a repeat has an id of its own).
    main = manifest["split"]
    main_ids = {r["qa_id"] for r in by_split.get(main, [])}
    robust_split_of = {}
    for s in manifest["robustness"]["settings"]:
        for r in by_split.get(s["split"], []):
            robust_split_of[r["qa_id"]] = s["split"]
    preds = {}
    with open(pred_path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            p = json.loads(line)
            split = p.get("split")
            if split is None:
                qid = p["qa_id"]
                split = main if qid in main_ids else robust_split_of.get(qid, main)
            key = (split, p["qa_id"])
            if key in preds:
                print(f"note: {pred_path}:{n} predicts {key} again; the last one counts")
            preds[key] = p.get("prediction")
    score = json.load(open(score_path))
    got_fams = score_families(score)
    want_fams = {fam for fam, b in bases.items() if b}
    if set(got_fams) != want_fams:
        problem(f"score robustness: families {sorted(got_fams)}, expected {sorted(want_fams)}")
    compared = 0
    for fam in sorted(want_fams):
        b = bases[fam]
        want = expected_block(by_split, preds, manifest, b)
        got = got_fams.get(fam)
        compare_block(fam, want, got)
        compared += 1
        types = collections.defaultdict(set)
        for r in by_split.get(manifest["split"], []):
            if r["qa_id"] in b:
                types[r["question_type"]].add(r["qa_id"])
        got_types = (got or {}).get("by_type") or {}
        if set(got_types) != set(types):
            problem(f"score {fam}.by_type: types {sorted(got_types)}, expected {sorted(types)}")
        for typ, tb in sorted(types.items()):
            compare_block(f"{fam}.by_type.{typ}", expected_block(by_split, preds, manifest, tb),
                          got_types.get(typ))
    return compared


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("release")
    ap.add_argument("--predictions")
    ap.add_argument("--score")
    ap.add_argument("--no-hub", action="store_true", help="skip the `datasets` loads")
    ap.add_argument("--config", default=CONFIG,
                    help="the corruption settings the release was built with (default: the repo's)")
    args = ap.parse_args()
    if bool(args.predictions) != bool(args.score):
        ap.error("--predictions and --score go together")
    root = args.release
    manifest = json.load(open(os.path.join(root, "manifest.json")))
    rob = manifest.get("robustness")
    if not rob:
        print("robustness: the manifest has no robustness splits")
        sys.exit(1)
    with open(args.config, "rb") as f:
        cfg = tomllib.load(f)

    by_split = read_rows(root, manifest)
    bases = check_rows(manifest, by_split)
    stats = {}
    checked = check_pixels(manifest, by_split, cfg, stats)
    for s in rob["settings"]:
        st = stats.get(s["split"], {})
        print(f"{s['split']}: {st.get('rows', 0)} rows, {st.get('images', 0)} images, "
              f"pixels {st.get('pixels', '-')}")
    if not args.no_hub:
        loaded = check_hub(root, manifest)
        print(f"datasets: {len(rob['settings'])} splits x {len(rob['families'])} families + default, "
              f"{loaded} rows loaded")
    if args.predictions:
        n = check_score(manifest, by_split, bases, args.predictions, args.score)
        print(f"score: {n} families recomputed")

    rows = sum(len(by_split.get(s["split"], [])) for s in rob["settings"])
    if problems:
        for p in problems:
            print(p)
        print(f"robustness: {len(problems)} problems")
        sys.exit(1)
    print(f"robustness: {len(rob['settings'])} settings, {rows} rows, {checked} pixel images checked, "
          f"0 problems")


if __name__ == "__main__":
    main()
