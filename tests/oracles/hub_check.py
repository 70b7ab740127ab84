"""Loads a release folder with Hugging Face `datasets` as a user of the Hub would, through the
dataset card's configs, and checks them against `manifest.json`.

    hub_check.py RELEASE

`get_dataset_config_names` must give `default` plus one config per family the manifest counts;
`load_dataset(RELEASE)` every split with every row; `load_dataset(RELEASE, family)` every split
holding that family's rows (a robustness split re-asks some families only) with exactly those
rows (each row's `family` column says so, the count is the manifest's `split_counts`); the first image of each config decodes to a PIL image of the size its row gives.
Every Parquet file's row groups hold at most the manifest's `row_group_rows`. Prints one
summary line; exits 1 naming the first problems.
"""

import json
import os
import sys

import pyarrow.parquet as pq
from datasets import get_dataset_config_names, load_dataset

root = sys.argv[1]
manifest = json.load(open(os.path.join(root, "manifest.json")))
counts = manifest["counts"]
splits = manifest["splits"]
split_counts = manifest["split_counts"]
problems = []

names = get_dataset_config_names(root)
want = ["default"] + sorted(counts)
if sorted(names) != sorted(want):
    problems.append(f"configs {names}, want {want}")

loaded = 0
for config in want:
    ds = load_dataset(root, None if config == "default" else config)
    own = [s for s in splits if config == "default" or split_counts[s].get(config, 0) > 0]
    if sorted(ds.keys()) != sorted(own):
        problems.append(f"{config}: splits {sorted(ds.keys())}, want {sorted(own)}")
        continue
    for split in own:
        d = ds[split]
        fam = d["family"]
        if config == "default":
            n = sum(split_counts[split].values())
            if sorted(set(fam)) != sorted(f for f, k in split_counts[split].items() if k > 0):
                problems.append(f"default/{split}: families {sorted(set(fam))}")
        else:
            n = split_counts[split][config]
            other = [f for f in fam if f != config]
            if other:
                problems.append(f"{config}/{split}: {len(other)} rows of {sorted(set(other))}")
        if len(d) != n:
            problems.append(f"{config}/{split}: {len(d)} rows, the manifest says {n}")
        if len(d):
            ex = d[0]
            img = ex["images"][0]
            if not hasattr(img, "size") or img.size != (ex["image_widths"][0], ex["image_heights"][0]):
                problems.append(f"{config}/{split}: first image {str(img)[:80]}")
        loaded += len(d)

most = manifest["options"]["row_group_rows"]
groups = 0
for shard in manifest["shards"]:
    md = pq.ParquetFile(os.path.join(root, shard["path"])).metadata
    for g in range(md.num_row_groups):
        groups += 1
        if md.row_group(g).num_rows > most:
            problems.append(f"{shard['path']}: row group {g} has {md.row_group(g).num_rows} rows")

print(
    f"hub: {len(want)} configs, {loaded} rows loaded, {groups} row groups of at most {most} rows, "
    f"{len(problems)} problems"
)
for p in problems[:20]:
    print("  " + p)
sys.exit(1 if problems else 0)
