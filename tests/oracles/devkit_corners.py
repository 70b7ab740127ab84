"""Projects every annotated box into every keyframe camera image with the official devkit.

For each keyframe camera sample_data: the boxes `get_sample_data` returns with
`BoxVisibility.NONE` (every annotation of the sample, moved into the camera frame), and for each
box the devkit's `view_points(box.corners(), K, normalize=True)`, i.e. the pixel coordinates of
the 8 corners in `Box.corners()` order, plus the corners' camera-frame depth. Non-finite values
(corners at depth 0) are written as null.

Output (JSON on stdout): {sample_data_token: {annotation_token: {"u": [8], "v": [8], "z": [8]}}}
"""
import json
import math
import sys

import numpy as np
from nuscenes.nuscenes import NuScenes
from nuscenes.utils.geometry_utils import BoxVisibility, view_points


def finite(xs):
    return [float(x) if math.isfinite(x) else None for x in xs]


root, version = sys.argv[1], sys.argv[2]
nusc = NuScenes(version=version, dataroot=root, verbose=False)
out = {}
with np.errstate(divide="ignore", invalid="ignore"):
    for sd in nusc.sample_data:
        if sd["sensor_modality"] != "camera" or not sd["is_key_frame"]:
            continue
        _, boxes, K = nusc.get_sample_data(sd["token"], box_vis_level=BoxVisibility.NONE)
        per = {}
        for box in boxes:
            corners = box.corners()
            uv = view_points(corners, np.array(K), normalize=True)
            per[box.token] = {"u": finite(uv[0]), "v": finite(uv[1]), "z": finite(corners[2])}
        out[sd["token"]] = per
json.dump(out, sys.stdout)
