#!/usr/bin/env bash
# The Python front door: builds the wheel once (`maturin build --release`, over the shared
# target folder so an up-to-date release binary is reused), checks its platform tag with
# auditwheel, installs it into a fresh venv with no Rust on PATH and runs `drivegen --version`
# and a one-scene `drivegen demo` from that venv. Prints the wheel's size and the seconds taken.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${DRIVEGEN_CACHE:-$HOME/.cache/drivegen}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target}"
start=$(date +%s)
tools="$cache/venv-wheel"
if [ ! -x "$tools/bin/maturin" ] || [ ! -x "$tools/bin/auditwheel" ]; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check "maturin>=1.5,<2" auditwheel
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tools/bin/maturin" build --release --locked --quiet --out "$work/dist" >&2
wheel=$(ls "$work"/dist/drivegen-*.whl)
"$tools/bin/auditwheel" show "$wheel" | tee "$work/show.txt"
grep -q "manylinux_" "$work/show.txt" || { echo "wheel: auditwheel finds no manylinux tag for $wheel" >&2; exit 1; }
python3 -m venv "$work/venv"
# The install runs with no cargo or rustc reachable: the wheel must not need them.
env -i HOME="$work" PATH="$work/venv/bin:/usr/bin:/bin" \
  "$work/venv/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
run() { env -i HOME="$work" XDG_RUNTIME_DIR=/tmp DRIVEGEN_PROGRESS=0 PATH="$work/venv/bin:/usr/bin:/bin" "$@"; }
[ "$(run sh -c 'command -v drivegen')" = "$work/venv/bin/drivegen" ] || { echo "wheel: drivegen is not on the venv's PATH" >&2; exit 1; }
run drivegen --version | grep -q "^drivegen " || { echo "wheel: drivegen --version printed nothing expected" >&2; exit 1; }
(cd "$work" && run drivegen demo --scenes 1 --out "$work/demo" >/dev/null)
[ -f "$work/demo/manifest.json" ] || { echo "wheel: the demo wrote no release manifest" >&2; exit 1; }
# The one-scene release a pip user gets has every family, none answerable without the images
# (held out by clip; a family of a few rows allowed its sampling error).
.venv-oracles/bin/python tests/oracles/blind_check.py "$work/demo" \
  --families drivebench,egodyn,metavqa,sig,stsbench --sampling-error 2 >"$work/blind.txt" ||
  { cat "$work/blind.txt" >&2; echo "wheel: the demo release fails the blind check" >&2; exit 1; }
echo "wheel: $(basename "$wheel") $(du -k "$wheel" | cut -f1) KiB, checked in $(( $(date +%s) - start )) s"
