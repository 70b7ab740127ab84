#!/usr/bin/env bash
# The batch script of a sharded drivegen build under Slurm; scripts/slurm/submit.sh submits it
# twice: as the array (MODE shard, one task per shard) and as the merge (MODE merge).
#   task.sh shard|merge DRIVEGEN CONFIG WORK OUT N LOGS
# sbatch copies this file at submission, so it need not be on the shared filesystem; every path
# it is given must be (and absolute: the task runs on another node).
set -euo pipefail

[ $# -eq 7 ] || { sed -n '4p' "$0" | sed 's/^#   /usage: /' >&2; exit 2; }
mode=$1 dg=$2 config=$3 work=$4 out=$5 n=$6 logs=$7

# Exits 2 unless VALUE is a decimal whole number from MIN to MAX (no sign, no leading zero):
# every number here reaches drivegen's command line or the shell's arithmetic, where a
# malformed one would be misread, overflow, or (in $((…))) be evaluated as an expression.
# sbatch copies only this file, so the check cannot be shared with submit.sh by sourcing it.
number() {
    local what=$1 v=$2 min=$3 max=$4
    if [[ $v =~ ^(0|[1-9][0-9]*)$ ]] && [ ${#v} -le ${#max} ] && [ "$v" -ge "$min" ] &&
        [ "$v" -le "$max" ]; then
        return 0
    fi
    printf "task.sh: %s must be a whole number from %s to %s, not '%s'\n" \
        "$what" "$min" "$max" "$v" >&2
    exit 2
}

# The most shards submit.sh submits.
max_shards=10000
number "N (the number of shards)" "$n" 1 "$max_shards"
number SLURM_RESTART_COUNT "${SLURM_RESTART_COUNT:-0}" 0 1000000
[ -z "${SLURM_CPUS_PER_TASK:-}" ] || number SLURM_CPUS_PER_TASK "$SLURM_CPUS_PER_TASK" 1 65536

case $mode in
shard)
    [ -n "${SLURM_ARRAY_TASK_ID:-}" ] || { echo "task.sh: SLURM_ARRAY_TASK_ID is not set: not an array task" >&2; exit 2; }
    number SLURM_ARRAY_TASK_ID "$SLURM_ARRAY_TASK_ID" 0 $((n - 1))
    name=task-$SLURM_ARRAY_TASK_ID
    job=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}
    # --shard-count makes drivegen check that the array it runs in has the N tasks submitted.
    args=(--shard auto --shard-count "$n")
    ;;
merge)
    name=merge
    job=$SLURM_JOB_ID
    args=(--merge "$n")
    ;;
*)
    echo "task.sh: unknown mode '$mode' (shard or merge)" >&2
    exit 2
    ;;
esac

# sbatch hands the job the submitter's environment: a Kubernetes index or shard count left
# there must not steer (or contradict) the array's own task id.
unset JOB_COMPLETION_INDEX DRIVEGEN_SHARD_COUNT

# One line per run start and end, appended: a requeued task shows each of its runs here, its
# exit status and how long it took, without reading the whole log.
runs=$logs/$name.runs
restart=${SLURM_RESTART_COUNT:-0}
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
record() {
    printf '%s %s job=%s restart=%s host=%s%s\n' "$1" "$(now)" "$job" "$restart" \
        "$(hostname -s)" "${2:-}" >>"$runs"
}

# The log is appended to across reruns (--open-mode=append): a header tells the runs apart.
echo "=== drivegen $mode: job $job, run $((restart + 1)), on $(hostname -s) at $(now)"
record start
t0=$SECONDS
# scancel and scontrol requeue send TERM before KILL; bash runs this once drivegen has died
# from the same TERM, so a stopped run is recorded as such and not as a silent gap.
trap 'record end " exit=143 seconds=$((SECONDS - t0)) (stopped by a signal)"; exit 143' TERM

# drivegen starts a thread per core it can see, which without a CPU-binding task plugin is
# every core of the node; --cpus-per-task says how many this task was given.
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
    args+=(--threads "$SLURM_CPUS_PER_TASK")
fi

rc=0
"$dg" build "$config" --work "$work" --out "$out" "${args[@]}" || rc=$?
record end " exit=$rc seconds=$((SECONDS - t0))"
exit "$rc"
