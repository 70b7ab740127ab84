#!/usr/bin/env bash
# Installs what drivegen's build, tests and demo need, when it is missing. Idempotent.
#  - the Vulkan loader and Mesa's lavapipe (a CPU Vulkan driver) where no GPU driver is present
#  - ffmpeg (the H.265 and bit-error corruptions)
#  - Chromium (headless, for the release viewer's tests)
#  - cmake and nasm, which build the bundled libjpeg-turbo (drivegen's JPEG encoder) with SIMD
#  - Python venvs holding the reference implementations the tests compare against
#    (nuscenes-devkit; numpy/scipy/pyarrow), cached outside the clone.
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${DRIVEGEN_CACHE:-$HOME/.cache/drivegen}"
mkdir -p "$cache"

need_apt=()
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1'; then need_apt+=(libvulkan1); fi
if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1 && ! ls /etc/vulkan/icd.d/*.json >/dev/null 2>&1; then
  need_apt+=(mesa-vulkan-drivers)
fi
if ! command -v ffmpeg >/dev/null 2>&1; then need_apt+=(ffmpeg); fi
if ! command -v cmake >/dev/null 2>&1; then need_apt+=(cmake); fi
if ! command -v nasm >/dev/null 2>&1; then need_apt+=(nasm); fi
if ! python3 -m venv --help >/dev/null 2>&1; then need_apt+=(python3-venv); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# Chromium, headless, drives the release viewer in the tests; without its recommends (about
# a hundred desktop packages) it is 11 packages.
if ! command -v chromium >/dev/null 2>&1; then
  echo "setup: installing chromium" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo (Rust >= 1.89) is required and was not found" >&2
  exit 1
fi

# venv NAME "packages..." : creates $cache/venv-NAME once (a stamp records its package list)
# and links it as .venv-NAME in the repo, where the tests look for it.
venv() {
  local name="$1"; shift
  local dir="$cache/venv-$name" want="$*"
  if [ ! -f "$dir/.stamp" ] || [ "$(cat "$dir/.stamp")" != "$want" ]; then
    echo "setup: creating the $name venv ($want)" >&2
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q --disable-pip-version-check "$@"
    echo "$want" > "$dir/.stamp"
  fi
  if [ -d ".venv-$name" ] && [ ! -L ".venv-$name" ]; then rm -rf ".venv-$name"; fi
  ln -sfn "$dir" ".venv-$name"
}

if [ "${DRIVEGEN_SKIP_VENVS:-0}" != 1 ]; then
  venv devkit "nuscenes-devkit==1.2.0"
  venv oracles "numpy" "scipy" "pyarrow" "imagecorruptions-imaug==1.1.5"
  # The readers a release must work with as it is (tests/it/release/end_to_end.rs).
  venv interop "pyarrow" "duckdb" "polars" "datasets" "pillow"
  # lmms-eval's task manager (tests/it/release/export_lmms_eval.rs), without its model stack (torch,
  # transformers, ...): the check stubs those at import and fails if one is used.
  venv lmms "datasets" "pillow" "pyyaml" "loguru" "pytz" "jinja2" "tenacity" "evaluate" "sacrebleu"
  if ! ".venv-lmms/bin/python" -c "import lmms_eval" 2>/dev/null; then
    ".venv-lmms/bin/pip" install -q --disable-pip-version-check --no-deps "lmms-eval==0.7.3"
  fi
fi
