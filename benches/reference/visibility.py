"""MetaVQA's nuScenes visibility method, for `drivegen bench visibility` to compare against.

Per camera frame, as described in docs/metavqa.md §2.1 (pass 0 and pass 2):
  * every box goes through the nuscenes-devkit chain (global -> ego -> camera with
    `Box.translate`/`Box.rotate`), `box_in_image(..., BoxVisibility.ANY)` keeps it,
  * its 8 corners are projected with `view_points(normalize=True)`, the axis-aligned min/max
    rectangle is clamped to the image,
  * the filled rectangles are painted far -> near (BEV distance to the ego) into an
    instance image, and each object's surviving pixels are counted.

Usage: python visibility.py FRAMES.json   (written by `drivegen bench visibility`)
Prints `frames_per_s=<x>` last. Only the per-frame work is timed, not the JSON load.
"""

import json
import sys
import time

import numpy as np
from nuscenes.utils.data_classes import Box
from nuscenes.utils.geometry_utils import BoxVisibility, box_in_image, view_points
from pyquaternion import Quaternion


def frame_counts(frame):
    w, h = frame["width"], frame["height"]
    fx, fy, cx, cy = frame["intrinsics"]
    k = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
    ego_t = np.array(frame["ego"]["t"])
    ego_q = Quaternion(frame["ego"]["q"])
    cam_t = np.array(frame["cam"]["t"])
    cam_q = Quaternion(frame["cam"]["q"])
    rects = []
    for i, b in enumerate(frame["boxes"]):
        box = Box(b["center"], b["size_wlh"], Quaternion(b["q"]))
        dist = float(np.linalg.norm(np.array(b["center"][:2]) - ego_t[:2]))
        box.translate(-ego_t)
        box.rotate(ego_q.inverse)
        box.translate(-cam_t)
        box.rotate(cam_q.inverse)
        if not box_in_image(box, k, (w, h), vis_level=BoxVisibility.ANY):
            continue
        uv = view_points(box.corners(), k, normalize=True)[:2]
        x0, y0 = uv.min(axis=1)
        x1, y1 = uv.max(axis=1)
        x0, x1 = int(max(0, min(w, np.floor(x0)))), int(max(0, min(w, np.ceil(x1))))
        y0, y1 = int(max(0, min(h, np.floor(y0)))), int(max(0, min(h, np.ceil(y1))))
        rects.append((dist, i + 1, x0, y0, x1, y1))
    ids = np.zeros((h, w), dtype=np.int32)
    for _, oid, x0, y0, x1, y1 in sorted(rects, reverse=True):
        ids[y0:y1, x0:x1] = oid
    return np.bincount(ids.ravel(), minlength=len(frame["boxes"]) + 1)[1:]


def main():
    with open(sys.argv[1]) as f:
        frames = json.load(f)
    frame_counts(frames[0])  # warm-up
    t0 = time.perf_counter()
    visible = 0
    for fr in frames:
        visible += int(frame_counts(fr).sum())
    dt = time.perf_counter() - t0
    print(f"frames={len(frames)} visible_pixels={visible} seconds={dt:.3f}")
    print(f"frames_per_s={len(frames) / dt:.3f}")


if __name__ == "__main__":
    main()
