#!/usr/bin/env bash
# Builds a release from the built-in synthetic nuScenes-format corpus into ./demo-release:
# installs what is missing, builds drivegen, then `drivegen demo` synthesises the corpus and
# runs the everything-config (configs/releases/everything.toml): ingest, ego motion, visibility,
# Set-of-Mark, corruptions, balancing, Parquet shards, report.html. Intermediate tables stay in
# ./demo-release.work, so an interrupted demo resumes where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
DRIVEGEN_SKIP_VENVS=1 scripts/setup.sh
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
cargo build --release --locked
bin=target/release/drivegen
"$bin" gpu-info
"$bin" demo --out demo-release --scenes "${DEMO_SCENES:-3}" --seed "${DEMO_SEED:-0}"
