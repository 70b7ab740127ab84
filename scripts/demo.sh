#!/usr/bin/env bash
# Builds a release from the built-in synthetic nuScenes-format corpus into ./demo-release.
set -euo pipefail
cd "$(dirname "$0")/.."
DRIVEGEN_SKIP_VENVS=1 scripts/setup.sh
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
cargo build --release --locked
bin=target/release/drivegen
out=demo-release
rm -rf "$out.partial" && mkdir -p "$out.partial"
"$bin" synth --out "$out.partial/corpus" --scenes "${DEMO_SCENES:-3}" --seed "${DEMO_SEED:-0}"
"$bin" ingest --source nuscenes --root "$out.partial/corpus" --out "$out.partial/store"
"$bin" inspect "$out.partial/store"
rm -rf "$out" && mv "$out.partial" "$out"
echo "demo release written to $out/"
