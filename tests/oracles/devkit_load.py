#!/usr/bin/env python3
"""Loads a `drivegen synth` dataroot with the official nuscenes-devkit and checks it.

Usage: devkit_load.py DATAROOT [VERSION]

Checks that the devkit loads every table, that every sample has a keyframe on all seven
channels, that `get_sample_data` on CAM_FRONT keyframes returns boxes, that sweeps get
interpolated boxes, that `box_velocity` works, and that every annotation's `num_lidar_pts`
equals the number of points of its LIDAR_TOP keyframe that `points_in_box` finds in it.
Prints a JSON report as its last line (counts plus devkit-projected box centres for the Rust
side to compare); exits 1 when a check fails.
"""
import json
import sys

import numpy as np
from nuscenes.nuscenes import NuScenes
from nuscenes.utils.data_classes import LidarPointCloud
from nuscenes.utils.geometry_utils import BoxVisibility, points_in_box, view_points

CHANNELS = {
    "CAM_FRONT", "CAM_FRONT_RIGHT", "CAM_FRONT_LEFT", "CAM_BACK", "CAM_BACK_LEFT",
    "CAM_BACK_RIGHT", "LIDAR_TOP",
}


def main():
    root = sys.argv[1]
    version = sys.argv[2] if len(sys.argv) > 2 else "v1.0-mini"
    nusc = NuScenes(version=version, dataroot=root, verbose=False)
    failures = []
    boxes_front = 0
    projections = []
    lidar_checked = 0
    sweeps_checked = 0
    velocities = 0
    for scene in nusc.scene:
        token = scene["first_sample_token"]
        n = 0
        while token:
            sample = nusc.get("sample", token)
            n += 1
            if set(sample["data"]) != CHANNELS:
                failures.append(f"sample {token} has channels {sorted(sample['data'])}")
            cam = sample["data"]["CAM_FRONT"]
            _, boxes, k = nusc.get_sample_data(cam, box_vis_level=BoxVisibility.ANY)
            boxes_front += len(boxes)
            for box in boxes[:3]:
                c = view_points(box.center.reshape(3, 1), k, normalize=True)
                projections.append(
                    {"sample_data": cam, "annotation": box.token, "u": float(c[0, 0]), "v": float(c[1, 0])}
                )
            # num_lidar_pts against the point cloud itself.
            lidar = sample["data"]["LIDAR_TOP"]
            path, lboxes, _ = nusc.get_sample_data(lidar, box_vis_level=BoxVisibility.NONE)
            pc = LidarPointCloud.from_file(path)
            for box in lboxes:
                ann = nusc.get("sample_annotation", box.token)
                inside = int(points_in_box(box, pc.points[:3, :]).sum())
                if inside != ann["num_lidar_pts"]:
                    failures.append(f"annotation {box.token}: {inside} points in box, num_lidar_pts {ann['num_lidar_pts']}")
                lidar_checked += 1
            for ann_token in sample["anns"][:5]:
                v = nusc.box_velocity(ann_token)
                velocities += int(np.all(np.isfinite(v)))
            # The sweep just before this keyframe gets (interpolated) boxes.
            prev = nusc.get("sample_data", cam)["prev"]
            if prev and sample["prev"]:
                nusc.get_boxes(prev)
                sweeps_checked += 1
            token = sample["next"]
        if n != scene["nbr_samples"]:
            failures.append(f"scene {scene['name']}: {n} samples chained, nbr_samples {scene['nbr_samples']}")
    if boxes_front == 0:
        failures.append("no boxes in any CAM_FRONT keyframe")
    if velocities == 0:
        failures.append("box_velocity never finite")
    for f in failures[:20]:
        print("FAIL", f)
    report = {
        "scenes": len(nusc.scene),
        "samples": len(nusc.sample),
        "sample_data": len(nusc.sample_data),
        "annotations": len(nusc.sample_annotation),
        "instances": len(nusc.instance),
        "boxes_in_front_keyframes": boxes_front,
        "lidar_boxes_checked": lidar_checked,
        "sweeps_checked": sweeps_checked,
        "finite_velocities": velocities,
        "failures": len(failures),
        "projections": projections,
    }
    print(json.dumps(report))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
