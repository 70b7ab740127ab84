#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/setup.sh), then formatting, lints and
# every test. GPU kernels run on whatever adapter exists (lavapipe without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
export DRIVEGEN_REQUIRE_ORACLES=1
export DRIVEGEN_PROGRESS=0
# A target folder outside the clone lets repeated runs (CI on the same machine) reuse builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${DRIVEGEN_CACHE:-$HOME/.cache/drivegen}/target}"
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
# The library's docs, private items included (they are the contributors' map), build with no
# broken intra-doc link and no other rustdoc warning.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --lib --locked --document-private-items
cargo test --all-targets --locked
scripts/wheel_check.sh
scripts/slurm/selftest.sh
