#!/usr/bin/env bash
# Submits a sharded drivegen build to Slurm: an array of N shard tasks and a merge job that runs
# once every task has succeeded.
#
#   scripts/slurm/submit.sh CONFIG N [--work DIR] [--out DIR] [--logs DIR] [--max-running K] [--] [SBATCH ARGS…]
#
# CONFIG, WORK, OUT and the logs must be on a filesystem every node sees; they are made
# absolute here. OUT defaults to the config's `out` and WORK to its `work`, else OUT.work
# (relative to the current folder, as drivegen resolves them). --max-running K lets at most K
# tasks run at once (--array=0-(N-1)%K). Any other argument goes to both sbatch calls
# (--partition, --time, --cpus-per-task, --exclusive, …). The drivegen binary is $DRIVEGEN, else
# `drivegen` on PATH; the nodes must see it at the same path.
#
# Logs and run records go to --logs, by default WORK/logs/ (the one entry of a work folder that
# drivegen leaves to others): task-I.log, merge.log (appended to across reruns), task-I.runs,
# merge.runs (a line per run start and end), and `jobs` (the ids).
set -euo pipefail

usage() {
    sed -n '5p' "$0" | sed 's/^#   /usage: /' >&2
    exit 2
}

# The most shards (array tasks) a build is split into; far above any sensible split, and a
# bound that keeps 0-(N-1) a plain number (a longer string of digits overflows the shell's
# arithmetic into a huge or negative --array).
max_shards=10000

# Exits 2 unless VALUE is a decimal whole number from MIN to MAX (no sign, no leading zero), so
# that no malformed or overflowing number reaches sbatch.
number() {
    local what=$1 v=$2 min=$3 max=$4
    if [[ $v =~ ^(0|[1-9][0-9]*)$ ]] && [ ${#v} -le ${#max} ] && [ "$v" -ge "$min" ] &&
        [ "$v" -le "$max" ]; then
        return 0
    fi
    printf "submit.sh: %s must be a whole number from %s to %s, not '%s'\n" \
        "$what" "$min" "$max" "$v" >&2
    exit 2
}

[ $# -ge 2 ] || usage
config=$1 n=$2
shift 2
number "N (the number of shards)" "$n" 1 "$max_shards"

work='' out='' logs='' max_running='' max_running_given=0
sbatch_args=()
while [ $# -gt 0 ]; do
    case $1 in
    --work) work=${2:?--work needs a folder}; shift 2 ;;
    --work=*) work=${1#*=}; shift ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --logs) logs=${2:?--logs needs a folder}; shift 2 ;;
    --logs=*) logs=${1#*=}; shift ;;
    --max-running)
        [ $# -ge 2 ] || number "--max-running" "" 1 "$max_shards"
        max_running=$2 max_running_given=1
        shift 2
        ;;
    --max-running=*) max_running=${1#*=} max_running_given=1; shift ;;
    --) shift; sbatch_args+=("$@"); break ;;
    *) sbatch_args+=("$1"); shift ;;
    esac
done

# Given (even as ''), it must be a number; K > N is allowed: it only means no task waits.
[ "$max_running_given" = 0 ] || number "--max-running" "$max_running" 1 "$max_shards"

[ -f "$config" ] || { echo "submit.sh: no config file '$config'" >&2; exit 2; }
config=$(readlink -f "$config")

dg=${DRIVEGEN:-$(command -v drivegen || true)}
[ -n "$dg" ] || { echo "submit.sh: no drivegen: set DRIVEGEN or put drivegen on PATH" >&2; exit 2; }
[ -x "$dg" ] || { echo "submit.sh: DRIVEGEN=$dg is not an executable file" >&2; exit 2; }
dg=$(readlink -f "$dg")

command -v sbatch >/dev/null || { echo "submit.sh: sbatch is not on PATH" >&2; exit 2; }

# A top-level string key of the config (before its first [table]); enough for `out`/`work`.
config_key() {
    awk -v key="$1" '
        /^[[:space:]]*\[/ { exit }
        $0 ~ "^[[:space:]]*" key "[[:space:]]*=" {
            sub(/^[^=]*=[[:space:]]*/, ""); sub(/[[:space:]]*(#.*)?$/, "")
            if ($0 ~ /^".*"$/ || $0 ~ /^'"'"'.*'"'"'$/) print substr($0, 2, length($0) - 2)
            exit
        }' "$config"
}
[ -n "$out" ] || out=$(config_key out)
[ -n "$out" ] || { echo "submit.sh: give --out (the config has no top-level out = \"…\")" >&2; exit 2; }
[ -n "$work" ] || work=$(config_key work)
[ -n "$work" ] || work=$out.work
out=$(readlink -m "$out")
work=$(readlink -m "$work")

[ -n "$logs" ] || logs=$work/logs
logs=$(readlink -m "$logs")
mkdir -p "$logs"

# Two submissions on one work folder would run each shard twice at once; refuse while the
# previous one's jobs are still queued or running (squeue lists only those by default).
if [ -f "$logs/jobs" ]; then
    old=$(sed -n 's/^\(array\|merge\)=//p' "$logs/jobs" | paste -sd, -)
    if [ -n "$old" ] && [ -n "$(squeue -h -j "$old" -o %i 2>/dev/null || true)" ]; then
        echo "submit.sh: jobs $old of an earlier submission on $work are still queued or running;" \
            "wait for them, or scancel them first" >&2
        exit 1
    fi
fi

range=0-$((n - 1))${max_running:+%$max_running}
name=drivegen-$(basename "$config" .toml)
task=$(dirname "$(readlink -f "$0")")/task.sh

# --requeue: a task Slurm requeues (node failure, preemption, scontrol requeue) runs the same
# command again, and drivegen resumes from WORK/checkpoints. --open-mode=append: a rerun would
# otherwise truncate the log of the run before it. --chdir: the submit folder may not exist on
# the node, the log folder does (the work folder may not yet). The user's arguments come last
# so they can override these.
common=(--parsable --requeue --open-mode=append --chdir="$logs")

array=$(sbatch "${common[@]}" --job-name="$name" --array="$range" \
    --output="$logs/task-%a.log" "${sbatch_args[@]}" \
    "$task" shard "$dg" "$config" "$work" "$out" "$n" "$logs")
array=${array%%;*}

# afterok:ARRAY waits for every task to succeed. --kill-on-invalid-dep=no keeps the merge
# PENDING (reason DependencyNeverSatisfied) when a task fails or is cancelled, instead of
# cancelling it, so scripts/slurm/resume.sh can requeue the task and re-arm the merge; a cluster
# configured with DependencyParameters=kill_invalid_depend would otherwise cancel it.
if ! merge=$(sbatch "${common[@]}" --job-name="$name-merge" \
    --dependency="afterok:$array" --kill-on-invalid-dep=no \
    --output="$logs/merge.log" "${sbatch_args[@]}" \
    "$task" merge "$dg" "$config" "$work" "$out" "$n" "$logs"); then
    # An array without its merge would only leave shards nobody merges.
    scancel "$array" || true
    echo "submit.sh: the merge job was refused; cancelled array job $array" >&2
    exit 1
fi
merge=${merge%%;*}

printf 'array=%s\nmerge=%s\nn=%s\nconfig=%s\nwork=%s\nout=%s\n' \
    "$array" "$merge" "$n" "$config" "$work" "$out" >"$logs/jobs"
echo "array job $array: $n shard tasks ($range), logs in $logs/task-I.log"
echo "merge job $merge: after every task succeeds, writes $out (log $logs/merge.log)"
echo "if a task fails or is cancelled: $(dirname "$0")/resume.sh $array $merge"
