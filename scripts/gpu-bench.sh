#!/usr/bin/env bash
# The GPU benchmark: `drivegen bench visibility` and `drivegen bench corrupt` on a real GPU, each
# beside the CPU twin and the Python method it replaces, measured in the same run on the same
# machine. BENCHMARKS.md records its tables.
#
#   scripts/gpu-bench.sh            (needs target/release/drivegen; writes into $OUT or ./gpu-bench)
#
# On the lent device machine, carry `.gpu` (../shared/gpu/prepare.sh) and the release binary;
# PYTHON names a python with nuscenes-devkit and imagecorruptions-imaug (default: python3).
# Sizes: VIS_FRAMES (GPU frames per timed run, default 4096), VIS_CPU_FRAMES (default 512),
# PY_FRAMES (default 256), CORRUPT_IMAGES (default 256), CORRUPT_CPU_IMAGES (default 32).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/gpu-bench}"
mkdir -p "$out"
bin="${DRIVEGEN_BIN:-$PWD/target/release/drivegen}"
py="${PYTHON:-python3}"
# The loader and ICD file that reach an NVIDIA driver headless (../shared/gpu/prepare.sh);
# elsewhere wgpu finds whatever adapter the machine has.
# shellcheck disable=SC1091
if [ -f .gpu/env.sh ] && command -v nvidia-smi >/dev/null 2>&1; then source .gpu/env.sh; fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}" DRIVEGEN_PROGRESS=0

{
  echo "# machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
  echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} | tee "$out/machine.txt"

# Runs one bench with the Python reference; when the reference cannot run there (a package
# missing), runs it again without, so the GPU and CPU figures are still recorded.
bench_vis() {
  local name="$1"; shift
  if ! "$bin" bench visibility "$@" --python "$py" >"$out/$name.md" 2>"$out/$name.err"; then
    echo "($name: the Python reference failed, see $name.err; timed without it)" | tee -a "$out/$name.err"
    "$bin" bench visibility "$@" --python none >"$out/$name.md" 2>>"$out/$name.err"
  fi
  cat "$out/$name.md"
}

bench_vis visibility-gpu --frames "${VIS_FRAMES:-4096}" --repeats 3 --device gpu \
  --python-frames "${PY_FRAMES:-256}"
"$bin" bench visibility --frames "${VIS_CPU_FRAMES:-512}" --repeats 1 --device cpu --python none \
  >"$out/visibility-cpu.md" 2>&1
cat "$out/visibility-cpu.md"

if ! "$bin" bench corrupt --images "${CORRUPT_IMAGES:-256}" --cpu-images "${CORRUPT_CPU_IMAGES:-32}" \
  --python "$(command -v "$py")" --report "$out/corrupt.md" >"$out/corrupt.log" 2>&1; then
  echo "(corrupt: the Python reference failed; timed without it)" >>"$out/corrupt.log"
  "$bin" bench corrupt --images "${CORRUPT_IMAGES:-256}" --cpu-images "${CORRUPT_CPU_IMAGES:-32}" \
    --report "$out/corrupt.md" >>"$out/corrupt.log" 2>&1
fi
cat "$out/corrupt.md"
