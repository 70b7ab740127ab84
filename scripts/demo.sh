#!/usr/bin/env bash
# Builds a release from the built-in synthetic nuScenes-format corpus into ./demo-release:
# the corpus, its scene store, and every stage that has landed, each stage's output in its own
# folder. The release is assembled in demo-release.partial and renamed when complete.
set -euo pipefail
cd "$(dirname "$0")/.."
DRIVEGEN_SKIP_VENVS=1 scripts/setup.sh
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
cargo build --release --locked
bin=target/release/drivegen
out=demo-release
rm -rf "$out.partial" && mkdir -p "$out.partial"
"$bin" gpu-info
"$bin" synth --out "$out.partial/corpus" --scenes "${DEMO_SCENES:-3}" --seed "${DEMO_SEED:-0}"
"$bin" ingest --source nuscenes --root "$out.partial/corpus" --out "$out.partial/store"
"$bin" inspect "$out.partial/store"
"$bin" egomotion --store "$out.partial/store" --out "$out.partial/egodyn"
"$bin" calibrate --store "$out.partial/store" --out "$out.partial/egodyn/recalibrated.toml" \
  --report "$out.partial/egodyn/calibration.md" --alpha-sweep 0.5:1.5:0.1
"$bin" balance --qa "$out.partial/egodyn/egodyn_qa.arrow" --out "$out.partial/egodyn/balanced" \
  --target "${DEMO_BALANCE_TARGET:-40}" --balance-letters
"$bin" release --qa "$out.partial/egodyn/balanced/balanced_qa.arrow" --store "$out.partial/store" \
  --out "$out.partial/release" --name "drivegen demo (EgoDyn)"
"$bin" visibility --store "$out.partial/store" --out "$out.partial/visibility/visibility.arrow" \
  --id-maps "$out.partial/visibility/id_maps"
"$bin" som --store "$out.partial/store" --visibility "$out.partial/visibility/visibility.arrow" \
  --out "$out.partial/som"
# DriveBench corruptions at DriveBench's severities on the first 2 keyframes (12 images), with
# the recognition questions, and one front image under all 15 corruptions × 5 severities.
"$bin" corrupt --store "$out.partial/store" --out "$out.partial/corrupt" --corruption all \
  --severity default --seed "${DEMO_SEED:-0}" --max-frames 2
sheet_src=$(find "$out.partial/corpus/samples/CAM_FRONT" -type f | sort | sed -n 1p)
"$bin" corrupt --contact-sheet "$sheet_src" --out "$out.partial/corrupt/contact_sheet.png" \
  --seed "${DEMO_SEED:-0}"
# MetaVQA: at most 10 questions per camera image, with their Set-of-Mark images.
"$bin" metavqa --store "$out.partial/store" --visibility "$out.partial/visibility/visibility.arrow" \
  --out "$out.partial/metavqa" --per-frame "${DEMO_METAVQA_PER_FRAME:-10}" --seed "${DEMO_SEED:-0}"
rm -rf "$out" && mv "$out.partial" "$out"
echo "demo release written to $out/"
