"""Runs imagecorruptions-imaug 1.1.5 for tests/it/corrupt/corrupt_reference.rs.

Usage: python imagecorruptions_run.py IN.png OUT_DIR JOBS_JSON
JOBS_JSON: [{"name": "fog", "severity": 5, "seed": 0, "out": "fog_5_0.png",
             "angle": null}, ...]
`angle` (motion_blur only) runs the package's own _motion_blur with that angle instead of a
random one, so the deterministic part can be compared pixel for pixel.
"""
import json
import os
import sys

import numpy as np
from PIL import Image
from imagecorruptions import corrupt
from imagecorruptions import corruptions as C

MOTION = [(10, 3), (15, 5), (15, 8), (15, 12), (20, 15)]


def main():
    src = np.array(Image.open(sys.argv[1]).convert("RGB"))
    out_dir = sys.argv[2]
    for job in json.loads(sys.argv[3]):
        np.random.seed(job["seed"])
        if job["name"] == "motion_blur" and job.get("angle") is not None:
            r, s = MOTION[job["severity"] - 1]
            y = C._motion_blur(np.array(src), radius=r, sigma=s, angle=job["angle"])
            y = np.uint8(np.clip(y, 0, 255))
        else:
            y = corrupt(src, corruption_name=job["name"], severity=job["severity"])
        Image.fromarray(y).save(os.path.join(out_dir, job["out"]))


if __name__ == "__main__":
    main()
