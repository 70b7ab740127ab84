"""Loads a nuScenes dataroot with the official devkit and prints what our store must agree with.

For every scene: its keyframes (token, timestamp), every camera sample_data (token, timestamp,
key flag, ego translation and rotation at the image, intrinsics), and every annotation with
the devkit's own box_velocity and category name.
"""
import json
import sys

from nuscenes.nuscenes import NuScenes

root, version = sys.argv[1], sys.argv[2]
nusc = NuScenes(version=version, dataroot=root, verbose=False)
out = {}
for scene in nusc.scene:
    samples = []
    tok = scene["first_sample_token"]
    while tok:
        s = nusc.get("sample", tok)
        samples.append(s)
        tok = s["next"]
    sample_tokens = {s["token"] for s in samples}
    cams = []
    for sd in nusc.sample_data:
        if sd["sample_token"] not in sample_tokens or sd["sensor_modality"] != "camera":
            continue
        ep = nusc.get("ego_pose", sd["ego_pose_token"])
        cs = nusc.get("calibrated_sensor", sd["calibrated_sensor_token"])
        cams.append({
            "token": sd["token"], "timestamp": sd["timestamp"], "key": sd["is_key_frame"],
            "channel": sd["channel"], "ego_t": ep["translation"], "ego_q": ep["rotation"],
            "K": cs["camera_intrinsic"], "filename": sd["filename"],
        })
    anns = []
    for s in samples:
        for a in s["anns"]:
            ann = nusc.get("sample_annotation", a)
            v = nusc.box_velocity(a)
            anns.append({
                "token": a, "category": ann["category_name"],
                "vx": None if v[0] != v[0] else float(v[0]),
                "vy": None if v[1] != v[1] else float(v[1]),
                "visibility": ann["visibility_token"],
            })
    out[scene["name"]] = {
        "samples": [[s["token"], s["timestamp"]] for s in samples],
        "cameras": cams,
        "annotations": anns,
    }
json.dump(out, sys.stdout)
