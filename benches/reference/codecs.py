"""Images per second of Pillow's JPEG encoder (libjpeg-turbo) and PNG encoder on the raw RGB
images `drivegen bench codecs` hands it, one process, one thread.

Usage: python codecs.py WIDTH HEIGHT QUALITY FILE.rgb...  (prints a JSON object
{file: {"jpeg": images/s, "jpeg_bytes": n, "jpeg_sha256": hex, "png": images/s,
"png_bytes": n, "libjpeg_turbo": version}})
"""
import hashlib
import io
import json
import sys
import time

from PIL import Image, features


def rate(fn, seconds=2.0):
    fn()  # warm-up
    reps, t0 = 0, time.perf_counter()
    while reps < 3 or (time.perf_counter() - t0 < seconds and reps < 200):
        fn()
        reps += 1
    return reps / (time.perf_counter() - t0)


def encode(img, fmt, **kw):
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def main():
    w, h, q = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    out = {}
    for path in sys.argv[4:]:
        with open(path, "rb") as f:
            img = Image.frombytes("RGB", (w, h), f.read())
        jpeg = encode(img, "JPEG", quality=q)
        png = encode(img, "PNG")
        out[path] = {
            "jpeg": rate(lambda: encode(img, "JPEG", quality=q)),
            "jpeg_bytes": len(jpeg),
            "jpeg_sha256": hashlib.sha256(jpeg).hexdigest(),
            "png": rate(lambda: encode(img, "PNG"), 1.0),
            "png_bytes": len(png),
            "libjpeg_turbo": features.version("libjpeg_turbo"),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
