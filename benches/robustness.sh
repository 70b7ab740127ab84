#!/usr/bin/env bash
# The corruption-robustness config (configs/releases/robustness.toml: every family that can be
# re-asked, 15 corruptions at DriveBench's severities) beside the plain everything-config, on
# the same synthetic corpus, the same machine, in the same run: rows and images per setting,
# corrupted images per second in the release pass, each build's wall time and peak RSS.
#
#   benches/robustness.sh [SCENES]      (default 3, the demo's size; needs target/release/drivegen)
#
# Both builds share one corpus and store (written first), so what differs is the work the
# robustness splits add. Prints Markdown; BENCHMARKS.md records the figures and the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}" DRIVEGEN_PROGRESS=0
bin="${DRIVEGEN_BIN:-$PWD/target/release/drivegen}"
scenes="${1:-3}"
case "$scenes" in '' | *[!0-9]*) echo "SCENES must be a number, not '$scenes'" >&2; exit 2 ;; esac
work=$(mktemp -d /tmp/drivegen-bench-robust.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$bin" synth --out "$work/corpus" --scenes "$scenes" --seed 0 >/dev/null
"$bin" ingest --source nuscenes --root "$work/corpus" --out "$work/store" >/dev/null

# Each config with its input replaced by the shared store.
for name in everything robustness; do
  mkdir -p "$work/$name"
  sed -e '/^\[input\]/,/^\[/{/^kind\|^scenes/d}' "configs/releases/$name.toml" |
    sed -e "s|^\[input\]|[input]\nkind = \"store\"\npath = \"$work/store\"|" \
      -e 's|^out = .*|out = "release"|' >"$work/$name/build.toml"
done

declare -A wall peak release
for name in everything robustness; do
  if ! (cd "$work/$name" && /usr/bin/time -f "%e %M" -o time.txt "$bin" build build.toml >build.log 2>&1); then
    echo "the $name build failed:" >&2
    tail -40 "$work/$name/build.log" >&2
    exit 1
  fi
  read -r w m <"$work/$name/time.txt"
  wall[$name]=$w
  peak[$name]=$((m / 1024))
  release[$name]=$(awk '$1 == "release" && $2 == "ran" {print $3}' "$work/$name/build.log")
done

m="$work/robustness/release/manifest.json"
echo "corpus: $scenes synthetic scenes (1600×900, 6 cameras), $(nproc) cores, $("$bin" --version)"
echo
echo "| build | wall s | release step s | peak RSS MiB | rows (all splits) | images (all splits) |"
echo "|---|---:|---:|---:|---:|---:|"
for name in everything robustness; do
  mf="$work/$name/release/manifest.json"
  rows=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(sum(sum(v.values()) for v in m['split_counts'].values()))" "$mf")
  imgs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['images'])" "$mf")
  echo "| $name | ${wall[$name]} | ${release[$name]} | ${peak[$name]} | $rows | $imgs |"
done
echo
python3 - "$m" "${release[everything]}" "${release[robustness]}" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
plain, robust = float(sys.argv[2]), float(sys.argv[3])
r = m["robustness"]
print(f"families {', '.join(r['families'])}; {r['rows_per_family']} rows per family; seed {r['seed']}")
print()
print("| split | corruption | severity | rows | images shown | images drawn |")
print("|---|---|---:|---:|---:|---:|")
drawn = 0
for s in r["settings"]:
    n = sum(m["split_counts"][s["split"]].values())
    im = s["images"]
    drawn += im["drawn"]
    print(f"| {s['split']} | {s['display_name']} | {s['severity']} | {n} | {im['shown']} | {im['drawn']} |")
extra = robust - plain
print()
print(f"corrupted images drawn in the release pass: {drawn}; the release step took {robust:.1f} s "
      f"against {plain:.1f} s without robustness splits: {drawn / extra:.1f} corrupted images/s "
      f"for the {extra:.1f} s they add" if extra > 0 else f"corrupted images drawn: {drawn}")
PY
