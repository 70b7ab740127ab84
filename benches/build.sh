#!/usr/bin/env bash
# End-to-end `drivegen build` of a store ingested from a nuScenes-layout root (the synthetic
# corpus, written first by `drivegen synth`): scenes/min, seconds per scene of every step,
# the work folder's bytes per scene beyond the store, and peak RSS at several corpus sizes
# (RSS must stay flat as scenes grow: every stage streams scene by scene, balancing keeps
# compact facts per row and the release writes one row group at a time), then Parquet write
# throughput of the release writer next to pyarrow writing the same table with the same
# settings.
#
#   benches/build.sh [SCENES...]        (default: 10 50; needs target/release/drivegen)
#
# BENCH_WIDTH/BENCH_HEIGHT (default 1600×900), BENCH_DURATION (s, default 8) and
# BENCH_CORRUPTIONS (default brightness,fog,motion_blur,h265) shape the corpus and the work;
# BENCH_DEVICE (auto, gpu or cpu; default auto) is where visibility, som, metavqa and corrupt
# run (scripts/gpu-bench.sh runs the build once on each); BENCH_KEEP (a folder) keeps each
# size's release there; BENCH_PARQUET=0 skips the Parquet comparison; BENCH_CORPORA (a folder)
# keeps each size's synthetic corpus there and reuses it on the next run (200 scenes at
# 1600×900 take about 50 minutes to render on 2 cores; the ingest is measured every run).
#
# Prints a Markdown table; BENCHMARKS.md records the figures and the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}" DRIVEGEN_PROGRESS=0
bin="${DRIVEGEN_BIN:-$PWD/target/release/drivegen}"
py="${PYTHON:-$PWD/.venv-interop/bin/python}"
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(10 50)
work=$(mktemp -d /tmp/drivegen-bench-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
rows=()
steps=()
for n in "${sizes[@]}"; do
  d="$work/s$n"
  mkdir -p "$d"
  cat > "$d/build.toml" <<TOML
name = "bench $n scenes"
seed = 0
out = "release"

[input]
kind = "store"
path = "store"

[stages]
egomotion = true
visibility = true
som = true
metavqa = true
corrupt = true
stsbench = true
sig = true

[visibility]
device = "${BENCH_DEVICE:-auto}"

[som]
device = "${BENCH_DEVICE:-auto}"

[metavqa]
device = "${BENCH_DEVICE:-auto}"

[corrupt]
device = "${BENCH_DEVICE:-auto}"
corruptions = "${BENCH_CORRUPTIONS:-brightness,fog,motion_blur,h265}"
severity = "default"
frames_per_scene = 1

[balance.egodyn]
target = 100000
balance_letters = true

[release]
text_only_controls = false

# This measures throughput, not a publishable benchmark: its families are not balanced, so the
# build's promises are relaxed here, explicitly.
[families.drivebench]
min_rows = 1
blind_margin = 1.0

[families.egodyn]
blind_margin = 1.0

[families.metavqa]
blind_margin = 1.0

[families.sig]
blind_margin = 1.0

[families.stsbench]
min_rows = 1
blind_margin = 1.0
TOML
  # The corpus is written by its own process: it is not part of a build of a real dataset,
  # and memory it freed would stay resident in the build's process.
  corpus="$d/corpus"
  if [ -n "${BENCH_CORPORA:-}" ]; then
    mkdir -p "$BENCH_CORPORA"
    corpus="$(cd "$BENCH_CORPORA" && pwd)/s$n-${BENCH_WIDTH:-1600}x${BENCH_HEIGHT:-900}-${BENCH_DURATION:-8}s"
  fi
  # The marker beside the corpus says it was written to the end: an interrupted one is written
  # again by synth, which replaces its own output and refuses a folder it did not write.
  if [ ! -f "$corpus.complete" ]; then
    "$bin" synth --out "$corpus" --scenes "$n" --duration "${BENCH_DURATION:-8}" \
      --width "${BENCH_WIDTH:-1600}" --height "${BENCH_HEIGHT:-900}" > /dev/null 2> "$d/synth.log" \
      || { cat "$d/synth.log" >&2; exit 1; }
    if [ -n "${BENCH_CORPORA:-}" ]; then touch "$corpus.complete"; fi
  fi
  # Ingest too: nuScenes' JSON tables are joined in memory (the format's own cost, reported
  # separately); the build then starts from the store as a sharded build's workers do.
  # GNU time reports the peak; a machine without it (the lent GPU machine) still runs the build.
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%M" -o "$d/ingest-rss.txt" "$bin" ingest --source nuscenes \
      --root "$corpus" --out "$d/store" > /dev/null 2>&1
    ingest_rss=$(( $(tail -1 "$d/ingest-rss.txt") / 1024 ))
  else
    "$bin" ingest --source nuscenes --root "$corpus" --out "$d/store" > /dev/null 2>&1
    ingest_rss="n/a"
  fi
  start=$(date +%s.%N)
  if [ -x /usr/bin/time ]; then
    (cd "$d" && /usr/bin/time -f "%M" -o build-rss.txt "$bin" build build.toml > summary.txt 2> log.txt)
    time_rss=$(( $(tail -1 "$d/build-rss.txt") / 1024 ))
  else
    (cd "$d" && "$bin" build build.toml > summary.txt 2> log.txt)
    time_rss="n/a"
  fi
  end=$(date +%s.%N)
  secs=$(python3 -c "print(f'{$end - $start:.1f}')")
  # The summary's per-step peaks (the largest is the process's peak, which /usr/bin/time
  # reports too: the build never resets the kernel's figure).
  rss=$(python3 - "$d/summary.txt" <<'PY'
import re, sys
peaks = [float(m.group(1)) for m in re.finditer(r"\s(\d+) \(\+\d+\)\s", open(sys.argv[1]).read())]
print(f"{max(peaks):.0f}" if peaks else "n/a")
PY
)
  spm=$(python3 -c "print(f'{$n / ($end - $start) * 60:.2f}')")
  # Intermediates: the work folder without the store it starts from (the store is the input
  # every sharded worker gets), per scene.
  work_b=$(du -sb "$d/release.work" | cut -f1)
  mb_scene=$(python3 -c "print(f'{$work_b / $n / 1e6:.2f}')")
  # BENCH_KEEP keeps each size's release (scripts/gpu-bench.sh compares the GPU and CPU builds).
  if [ -n "${BENCH_KEEP:-}" ]; then
    mkdir -p "$BENCH_KEEP" && rm -rf "$BENCH_KEEP/release-s$n" && cp -a "$d/release" "$BENCH_KEEP/release-s$n"
  fi
  echo "--- $n scenes: $secs s, peak RSS $rss MiB, work folder $work_b bytes" >&2
  cat "$d/summary.txt" >&2
  rows+=("| $n | $secs | $spm | $rss | $time_rss | $ingest_rss | $mb_scene |")
  steps+=("$(python3 - "$d/summary.txt" "$n" <<'PY'
import re, sys
n = int(sys.argv[2])
cells = []
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+ran\s+([0-9.]+)\s+(\d+) \(\+\d+\)", line)
    if m:
        cells.append(f"{m.group(1)} {float(m.group(2)) / n:.2f} s, {m.group(3)} MiB")
print(f"| {n} | " + ", ".join(cells) + " |")
PY
)")
done
echo "| scenes | build seconds | scenes/min | build peak RSS, summary (MiB) | build peak RSS, /usr/bin/time (MiB) | ingest peak RSS (MiB) | work folder MB/scene |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
echo "| scenes | by step: seconds per scene, peak RSS |"
echo "|---:|---|"
printf '%s\n' "${steps[@]}"

# Parquet write throughput: rewrite the largest build's release with the release writer, then
# the same table with pyarrow (zstd level 3, the same row groups). pyarrow holds the whole
# release in memory, so BENCH_PARQUET=0 leaves this out for runs of hundreds of scenes.
[ "${BENCH_PARQUET:-1}" = 0 ] && exit 0
d="$work/s${sizes[-1]}"
qa=$(ls "$d"/release.work/families/*/*.arrow | sed 's/^/--qa /' | tr '\n' ' ')
store="$d/store"
t0=$(date +%s.%N)
# shellcheck disable=SC2086
"$bin" release $qa --store "$store" --image-dir "$d/release.work/metavqa" \
  --image-dir "$d/release.work/corrupt" --out "$work/rel" > /dev/null
t1=$(date +%s.%N)
mb=$(du -cm "$work"/rel/data/*.parquet | tail -1 | cut -f1)
ours=$(python3 -c "print(f'{$mb / ($t1 - $t0):.0f}')")
if [ -x "$py" ]; then
  theirs=$("$py" - "$work/rel" <<'PY'
import glob, sys, time, pyarrow.parquet as pq
files = sorted(glob.glob(sys.argv[1] + "/data/*.parquet"))
tables = [pq.read_table(f) for f in files]
mb = sum(t.nbytes for t in tables) / 2**20
t0 = time.perf_counter()
for i, t in enumerate(tables):
    pq.write_table(t, f"/tmp/drivegen-bench-pyarrow-{i}.parquet", compression="zstd",
                   compression_level=3, row_group_size=256)
dt = time.perf_counter() - t0
print(f"{mb / dt:.0f}")
PY
)
else
  theirs="n/a (no $py)"
fi
echo
echo "| Parquet writer | MiB/s (release data, zstd 3) |"
echo "|---|---:|"
echo "| drivegen release (read or draw images + write, $mb MiB) | $ours |"
echo "| pyarrow write_table (same table, in memory) | $theirs |"
rm -f /tmp/drivegen-bench-pyarrow-*.parquet
