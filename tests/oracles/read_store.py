"""Reads every table of a drivegen scene store with pyarrow and prints a JSON summary."""
import json
import sys

import pyarrow as pa
import pyarrow.ipc

store = sys.argv[1]
out = {}
for t in ["scenes", "frames", "ego_poses", "cameras", "objects"]:
    with pa.ipc.open_file(f"{store}/{t}.arrow") as r:
        table = r.read_all()
    out[t] = {
        "rows": table.num_rows,
        "batches": r.num_record_batches,
        "columns": {f.name: str(f.type) for f in table.schema},
        "first": {k: v for k, v in table.slice(0, 1).to_pylist()[0].items()} if table.num_rows else None,
    }
json.dump(out, sys.stdout, default=str)
