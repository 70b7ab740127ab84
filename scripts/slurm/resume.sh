#!/usr/bin/env bash
# Recovers a sharded build submitted by scripts/slurm/submit.sh after tasks failed or were
# cancelled: requeues those tasks and re-arms the merge job.
#
#   scripts/slurm/resume.sh ARRAY_JOB MERGE_JOB     (the ids submit.sh printed, also in WORK/logs/jobs)
#
# A requeued task runs its command again and resumes from the work folder's checkpoints.
# Re-arming is needed because once a task has failed or been cancelled, the merge's
# afterok:ARRAY is never satisfied again, even after the task is requeued and succeeds: the
# merge stays PENDING with reason DependencyNeverSatisfied. Setting its dependency anew, on
# each task by id, makes Slurm judge it again.
set -euo pipefail

[ $# -eq 2 ] || { sed -n '5p' "$0" | sed 's/^#   /usage: /' >&2; exit 2; }
array=$1 merge=$2

# Exits 2 unless VALUE is a Slurm job id: a decimal whole number from 1 to 2^32 - 1 (no sign,
# no leading zero), so that nothing else reaches squeue and scontrol.
job_id() {
    local what=$1 v=$2 max=4294967295
    if [[ $v =~ ^[1-9][0-9]*$ ]] && [ ${#v} -le ${#max} ] && [ "$v" -le "$max" ]; then
        return 0
    fi
    printf "resume.sh: %s must be a job id (a whole number from 1 to %s), not '%s'\n" \
        "$what" "$max" "$v" >&2
    exit 2
}
job_id ARRAY_JOB "$array"
job_id MERGE_JOB "$merge"

# Every task with its state while slurmctld still remembers the array (MinJobAge after it
# ended); -r lists pending tasks one by one instead of as one A_[2-3] line.
tasks=$(squeue -h -r -t all -j "$array" -o '%i %T' 2>/dev/null || true)
if [ -z "$tasks" ]; then
    echo "resume.sh: Slurm no longer knows array job $array; run scripts/slurm/submit.sh again" \
        "with the same arguments: shards that are complete are reused from the work folder" >&2
    exit 1
fi

ids=()
requeued=0
while read -r id state; do
    ids+=("$id")
    case $state in
    FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | DEADLINE)
        echo "requeue $id ($state)"
        scontrol requeue "$id"
        requeued=$((requeued + 1))
        ;;
    esac
done <<<"$tasks"

dep=afterok:$(IFS=:; echo "${ids[*]}")
state=$(squeue -h -t all -j "$merge" -o %T 2>/dev/null || true)
case $state in
PENDING)
    scontrol update JobId="$merge" Dependency="$dep"
    echo "merge $merge re-armed: $dep"
    ;;
FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | DEADLINE)
    # Held while its dependency changes, so it cannot start on the old one in between.
    scontrol requeuehold "$merge"
    scontrol update JobId="$merge" Dependency="$dep"
    scontrol release "$merge"
    echo "merge $merge ($state) requeued after $dep"
    ;;
'')
    echo "resume.sh: Slurm no longer knows merge job $merge; once the tasks succeed, merge" \
        "by hand: drivegen build CONFIG --work WORK --out OUT --merge ${#ids[@]}" >&2
    exit 1
    ;;
*)
    echo "merge $merge is $state: left as it is"
    ;;
esac
echo "requeued $requeued of ${#ids[@]} tasks"
