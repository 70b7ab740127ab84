"""Images per second of imagecorruptions-imaug 1.1.5 for the corruptions drivegen shares with
it, at DriveBench's default severities, on a textured test image of the given size.

Usage: python corrupt.py WIDTH HEIGHT  (prints a JSON object {name: images_per_second})
Run by `drivegen bench corrupt` with the oracles venv (scripts/setup.sh installs the package).
"""
import json
import sys
import time

import numpy as np
from imagecorruptions import corrupt

# drivegen name -> (imagecorruptions name, DriveBench default severity)
SHARED = {
    "brightness": ("brightness", 4),
    "snow": ("snow", 4),
    "fog": ("fog", 5),
    "saturate": ("saturate", 5),
    "motion_blur": ("motion_blur", 4),
    "zoom_blur": ("zoom_blur", 4),
}


def test_image(w, h):
    x = np.arange(w, dtype=np.uint64)[None, :]
    y = np.arange(h, dtype=np.uint64)[:, None]
    n = (((x * 7919) ^ (y * 104729)) * 2654435761 % 2**32) >> 26
    img = np.zeros((h, w, 3), dtype=np.uint8)
    img[..., 0] = (x * 255 // w).astype(np.uint8)
    img[..., 1] = (y * 255 // h).astype(np.uint8)
    img[..., 2] = ((n // 2) + ((x // 40 + y // 40) % 2) * 90).astype(np.uint8)
    return img


def main():
    w, h = int(sys.argv[1]), int(sys.argv[2])
    img = test_image(w, h)
    np.random.seed(0)
    out = {}
    for name, (ref, sev) in SHARED.items():
        corrupt(img, corruption_name=ref, severity=sev)  # warm-up (numba/JIT, caches)
        reps, t0 = 0, time.perf_counter()
        while reps < 2 or (time.perf_counter() - t0 < 3.0 and reps < 20):
            corrupt(img, corruption_name=ref, severity=sev)
            reps += 1
        out[name] = reps / (time.perf_counter() - t0)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
