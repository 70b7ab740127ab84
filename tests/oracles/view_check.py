"""Drives `drivegen view` output in headless Chromium and checks it against the release, read
independently with pyarrow.

    view_check.py RELEASE VIEWER_DIR SCREENSHOT.png

The page must load without console messages (it logs none of its own, so any is an error), show
every row's count under each filter (split, family, type, answer) as the release has it, show
only rows of the chosen family, load each shown image at its full width from a file holding the
release's bytes for that row, and render a MetaVQA row's marked image into a screenshot.
"""

import hashlib
import html.parser
import os
import subprocess
import sys
from collections import Counter

from PIL import Image

# The release's rows, read with pyarrow as the export check reads them (same folder).
from export_check import release_rows

CHROMIUM = os.environ.get("CHROMIUM", "chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000"]


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.body, self.rows, self.current = {}, [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "div" and a.get("class") == "row":
            self.current = {"id": a.get("data-qa-id"), "split": a.get("data-split"),
                            "family": a.get("data-family"), "images": []}
            self.rows.append(self.current)
        elif tag == "img" and self.current is not None and "src" in a:
            self.current["images"].append((a["src"], a.get("data-loaded")))


def load(viewer, fragment, problems, shot=None):
    url = "file://" + os.path.abspath(os.path.join(viewer, "index.html")) + fragment
    args = [CHROMIUM] + FLAGS + (["--window-size=1400,1400", "--screenshot=" + shot] if shot else ["--dump-dom"])
    p = subprocess.run(args + [url], capture_output=True, text=True, timeout=120)
    console = [l for l in p.stderr.splitlines() if "CONSOLE" in l]
    if console:
        problems.append(f"{fragment}: console messages: {console[:3]}")
    d = Dom()
    d.feed(p.stdout)
    return d


def main():
    rel, viewer, shot = sys.argv[1:4]
    rows = release_rows(rel)
    for (_, split), r in rows.items():
        r["split"] = split
    problems = []
    checks = [("", lambda r: True)]
    for f in sorted({r["family"] for r in rows.values()}):
        checks.append((f"#family={f}", lambda r, f=f: r["family"] == f))
    for s in sorted({r["split"] for r in rows.values()}):
        checks.append((f"#split={s}&family=sig&answer=B",
                       lambda r, s=s: r["split"] == s and r["family"] == "sig" and r["answer_letter"] == "B"))
    t = Counter(r["question_type"] for r in rows.values() if r["family"] == "metavqa").most_common(1)[0][0]
    checks.append((f"#type={t}", lambda r: r["question_type"] == t))
    for fragment, keep in checks:
        d = load(viewer, fragment, problems)
        want = sum(1 for r in rows.values() if keep(r))
        if d.body.get("data-matching") != str(want):
            problems.append(f"{fragment}: the page says {d.body.get('data-matching')} rows match, the release has {want}")
        if len(d.rows) != min(20, want):
            problems.append(f"{fragment}: {len(d.rows)} rows shown")
        for row in d.rows:
            r = rows.get((row["id"], row["split"]))
            if r is None or not keep(r):
                problems.append(f"{fragment}: {row['id']} ({row['split']}) shown but does not match the filter")
                continue
            want_imgs = [hashlib.sha256(i["bytes"]).hexdigest() for i in r["images"]]
            got = row["images"]
            if len(got) != len(want_imgs):
                problems.append(f"{fragment}: {row['id']} shows {len(got)} images, the release {len(want_imgs)}")
            for (src, loaded), h in zip(got, want_imgs):
                data = open(os.path.join(viewer, src), "rb").read()
                if hashlib.sha256(data).hexdigest() != h:
                    problems.append(f"{fragment}: {row['id']}: {src} is not the release's image")
                if loaded != str(Image.open(os.path.join(viewer, src)).width):
                    problems.append(f"{fragment}: {row['id']}: {src} loaded at width {loaded}")
    # A MetaVQA row's marked image, rendered.
    load(viewer, "#family=metavqa&split=test", problems, shot=shot)
    img = Image.open(shot).convert("RGB")
    colours = len(img.crop((0, 0, img.width, min(img.height, 700))).getcolors(maxcolors=1 << 24))
    if colours < 500:
        problems.append(f"the MetaVQA screenshot holds {colours} colours: no image was drawn")
    print(f"viewer: {len(checks) + 1} pages loaded, {len(problems)} problems")
    for p in problems[:20]:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
