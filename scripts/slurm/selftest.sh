#!/usr/bin/env bash
# A real Slurm test of scripts/slurm/: starts a private single-node cluster (munged, slurmctld,
# slurmd) in a temporary folder, builds a tiny synthetic release unsharded, then as a 4-task
# array + merge through submit.sh, cancels one running task and recovers it with resume.sh, and
# checks that the merged release is byte-identical to the unsharded one. Stops every daemon it
# started, on failure too.
#
#   scripts/slurm/selftest.sh [SUBMIT.SH OPTIONS…]      e.g. --max-running 1
#
# Needs root (it installs Debian's slurm packages when missing, and slurmd runs jobs as root).
# SELFTEST_KEEP=1 keeps the temporary folder (it is kept anyway on failure). The binary:
# $DRIVEGEN, else the debug build `cargo test` leaves in
# ${CARGO_TARGET_DIR:-$HOME/.cache/drivegen/target}/debug/drivegen.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
t_start=$SECONDS
say() { printf 'slurm selftest: %s\n' "$*"; }
die() { printf 'slurm selftest: FAILED: %s\n' "$*" >&2; exit 1; }

dg=${DRIVEGEN:-${CARGO_TARGET_DIR:-$HOME/.cache/drivegen/target}/debug/drivegen}
[ -x "$dg" ] || die "no drivegen binary at $dg: build it (cargo build) or set DRIVEGEN"
dg=$(readlink -f "$dg")
[ "$(id -u)" = 0 ] || die "needs root: it installs packages, and this cluster runs jobs as root"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
    ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    say "installing slurmctld slurmd slurm-client munge"
    pkgs=(slurmctld slurmd slurm-client munge)
    export DEBIAN_FRONTEND=noninteractive
    # A fresh machine may have no package lists yet; update only when the install needs it.
    apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1 || {
        apt-get update -qq && apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
    } || die "apt-get could not install ${pkgs[*]}"
fi

# Short: the munge socket and slurmd's spool sockets must stay under 108 bytes.
T=$(mktemp -d /tmp/dgslurm.XXXXXX)
# munged refuses a socket folder others cannot enter.
chmod 755 "$T"
mkdir -p "$T/state" "$T/spool" "$T/ref"
# Put into the daemons' (and the jobs') environment, so the teardown finds any slurmstepd or
# job process they leave behind by this value rather than by process name.
marker=DG_SLURM_SELFTEST=$T

ok=0
show_logs() {
    local f
    for f in "$T"/munged.log "$T"/slurmctld.log "$T"/slurmd.log "$T"/work/logs/*; do
        [ -f "$f" ] || continue
        printf '\n----- %s (last 60 lines)\n' "$f" >&2
        tail -n 60 "$f" >&2
    done
    if [ -n "${array:-}" ]; then
        printf '\n----- squeue\n' >&2
        timeout 10 squeue -t all -r -o '%i %T %r' >&2 || true
    fi
}
stop_pid() {
    local pidfile=$1 pid i
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}
teardown() {
    local rc=$? p t_stop=$SECONDS
    trap - EXIT INT TERM
    [ "$ok" = 1 ] || { show_logs; rc=1; }
    if [ -f "$T/slurmctld.pid" ]; then timeout 10 scancel -u root 2>/dev/null || true; fi
    stop_pid "$T/slurmd.pid"
    stop_pid "$T/slurmctld.pid"
    stop_pid "$T/munged.pid"
    # One grep over every process's environment (NUL-separated, hence -z).
    for p in $(grep -lzxF "$marker" /proc/[0-9]*/environ 2>/dev/null || true); do
        p=${p#/proc/} p=${p%/environ}
        [ "$p" != $$ ] || continue
        say "killing leftover pid $p: $({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null)"
        kill -KILL "$p" 2>/dev/null || true
    done
    if [ "$ok" = 1 ] && [ -z "${SELFTEST_KEEP:-}" ]; then
        rm -rf "$T"
    else
        say "kept $T for a look"
    fi
    say "stopped the cluster in $((SECONDS - t_stop))s"
    exit "$rc"
}
trap teardown EXIT
trap 'die interrupted' INT TERM

# Polls CMD every 0.2 s until it succeeds; fails the test after SECONDS.
wait_for() {
    local what=$1 secs=$2 t0=$SECONDS
    shift 2
    until "$@"; do
        ((SECONDS - t0 < secs)) || die "timed out after ${secs}s waiting for $what"
        sleep 0.2
    done
}
# A job's (or array task's) state, empty while Slurm does not know it.
state() { timeout 10 squeue -h -t all -j "$1" -o %T 2>/dev/null || true; }
is_state() { [ "$(state "$1")" = "$2" ]; }

# Ports nobody listens on, so a cluster already on this machine is left alone.
free_port() {
    local p=$1
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}
ctld_port=$(free_port 16817)
slurmd_port=$(free_port $((ctld_port + 1)))
host=$(hostname -s)

export SLURM_CONF=$T/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=dgselftest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# A short credential lifetime: with the default 120 s a requeued task waits ~2 min to run again.
AuthInfo=socket=$T/munge.sock,cred_expire=10
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
# No cgroups: they need a cgroup setup the test machine may not have, and can leave one behind.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Jobs start ~1 s after sbatch instead of up to 3 s. A requeued task may start only
# cred_expire + 1 s later; nothing new happens then to wake the scheduler, so without a short
# sched_interval (default 60 s) it waits for the next periodic pass.
SchedulerParameters=batch_sched_delay=0,sched_interval=1
# The node reports CPUs=2 whatever the machine has, so the test is the same everywhere.
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
MpiDefault=none
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=selftest Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

say "starting munged, slurmctld and slurmd in $T"
head -c 1024 /dev/urandom >"$T/munge.key"
chmod 400 "$T/munge.key"
env "$marker" munged --force --socket="$T/munge.sock" --key-file="$T/munge.key" \
    --pid-file="$T/munged.pid" --log-file="$T/munged.log" --seed-file="$T/munged.seed"
wait_for "munged" 10 test -S "$T/munge.sock"
env "$marker" slurmctld -f "$SLURM_CONF"
env "$marker" slurmd -f "$SLURM_CONF" -N "$host"
wait_for "slurmctld and slurmd pid files" 15 test -s "$T/slurmctld.pid" -a -s "$T/slurmd.pid"
# The scheduler's first pass comes a few seconds after slurmctld starts: a probe job that ran
# shows the whole chain (munge, controller, node, step daemon) works.
probe=$(timeout 20 sbatch --parsable --output=/dev/null --export="ALL,$marker" --wrap=true)
wait_for "the probe job $probe" 30 is_state "$probe" COMPLETED
say "cluster up in $((SECONDS - t_start))s"

cat >"$T/build.toml" <<'EOF'
# A tiny synthetic build with every stage, small enough for a debug binary on 2 cores.
name = "slurm selftest"
seed = 7
out = "release"

[input]
kind = "synth"
scenes = 6
duration_s = 4.0
width = 160
height = 90

[stages]
egomotion = true
visibility = true
som = true
corrupt = true
stsbench = true
sig = true
metavqa = true

[visibility]
device = "cpu"

[som]
device = "cpu"

[corrupt]
device = "cpu"
corruptions = "brightness,camera_crash"
severity = "default"
frames_per_scene = 1

[metavqa]
device = "cpu"

[release]
rows_per_shard = 40
text_only_controls = true

# Unbalanced on purpose: this build checks how shards split, resume and merge, not how hard
# the questions are, so every family is published over the default blind margin, explicitly.
[families.drivebench]
blind_margin = 1.0
[families.egodyn]
blind_margin = 1.0
[families.metavqa]
blind_margin = 1.0
[families.sig]
blind_margin = 1.0
[families.stsbench]
blind_margin = 1.0
EOF
export DRIVEGEN_PROGRESS=0

t0=$SECONDS
"$dg" build "$T/build.toml" --work "$T/ref/work" --out "$T/ref/release" >"$T/ref/build.log" 2>&1 ||
    { cat "$T/ref/build.log" >&2; die "the unsharded reference build failed"; }
say "reference build in $((SECONDS - t0))s"

# The first run of the last task is stopped in the middle: the wrapper freezes drivegen
# (SIGSTOP) once its first step is checkpointed, and the test cancels the task there (Slurm
# sends SIGCONT and SIGTERM), so the rerun must resume from that checkpoint. A shard can finish
# before the freeze lands; then the wrapper holds the task before exiting instead, and the
# test cancels it all the same. Every other run goes straight to drivegen; the first two tasks
# start together and share the work folder's corpus and store steps.
n=4
victim=$((n - 1))
first_step=$T/work/checkpoints/shard_store_${victim}_of_$n.json
cat >"$T/drivegen" <<EOF
#!/bin/bash
if [ "\${SLURM_ARRAY_TASK_ID:-}" != $victim ] || [ -e "$T/held" ]; then
    exec "$dg" "\$@"
fi
"$dg" "\$@" &
pid=\$!
# The process state from /proc: a drivegen that has exited stays a zombie (Z) until waited for,
# and kill -0 or kill -STOP still succeed on it.
st() { cut -d' ' -f3 /proc/\$pid/stat 2>/dev/null; }
while [ "\$(st)" != Z ] && [ ! -e "$first_step" ]; do sleep 0.02; done
kill -STOP \$pid 2>/dev/null || true
if [ "\$(st)" = T ]; then
    echo frozen >"$T/held"
    wait \$pid
else
    echo finished >"$T/held"
    wait \$pid || true
    sleep 120
fi
EOF
chmod +x "$T/drivegen"

t0=$SECONDS
DRIVEGEN=$T/drivegen timeout 30 "$here/submit.sh" "$T/build.toml" "$n" \
    --work "$T/work" --out "$T/release" "$@" --export="ALL,$marker" ||
    die "submit.sh failed"
jobs=$T/work/logs/jobs
array=$(sed -n 's/^array=//p' "$jobs")
merge=$(sed -n 's/^merge=//p' "$jobs")
if [ -z "$array" ] || [ -z "$merge" ]; then
    die "submit.sh wrote no job ids to $jobs"
fi

v=${array}_$victim
wait_for "task $v to run" 60 test -e "$T/held"
wait_for "task $v to be RUNNING" 10 is_state "$v" RUNNING
say "cancelling running task $v"
timeout 10 scancel "$v"
wait_for "task $v to be CANCELLED" 20 is_state "$v" CANCELLED

others_done() {
    local i s
    for ((i = 0; i < n; i++)); do
        [ "$i" != "$victim" ] || continue
        s=$(state "${array}_$i")
        case $s in
        COMPLETED) ;;
        PENDING | RUNNING | CONFIGURING | COMPLETING | REQUEUED) return 1 ;;
        *) die "task ${array}_$i ended $s" ;;
        esac
    done
}
wait_for "the other tasks to complete" 90 others_done
# What resume.sh is for: the cancelled task stops the merge for good until it is re-armed.
merge_stuck() {
    [ "$(timeout 10 squeue -h -j "$merge" -o '%T %r')" = "PENDING DependencyNeverSatisfied" ]
}
wait_for "merge $merge to wait on a dependency never satisfied" 20 merge_stuck

say "recovering with resume.sh"
timeout 30 "$here/resume.sh" "$array" "$merge" || die "resume.sh failed"
merge_ends() { case $(state "$merge") in PENDING | RUNNING | CONFIGURING | COMPLETING | REQUEUED) false ;; esac; }
wait_for "the merge $merge to end" 120 merge_ends
is_state "$merge" COMPLETED || die "merge $merge ended $(state "$merge")"
is_state "$v" COMPLETED || die "task $v is $(state "$v") after the merge"
say "sharded build, cancel, resume and merge in $((SECONDS - t0))s"

# The checks: every task's log and run records, the cancelled task ran twice, and the
# release's deterministic files (all but report.html and report/, which hold timings) match.
logs=$T/work/logs
for ((i = 0; i < n; i++)); do
    [ -s "$logs/task-$i.log" ] || die "no log $logs/task-$i.log"
    [ -f "$T/work/shard-$i-of-$n/shard.json" ] || die "shard $i/$n has no shard.json"
    starts=$(grep -c '^start ' "$logs/task-$i.runs" || true)
    want=1
    [ "$i" != "$victim" ] || want=2
    [ "$starts" = "$want" ] || die "task $i ran $starts times, expected $want ($logs/task-$i.runs)"
    tail -n 1 "$logs/task-$i.runs" | grep -q '^end .* exit=0 ' ||
        die "task $i's last run did not end with exit 0 ($logs/task-$i.runs)"
done
vl=$logs/task-$victim
[ "$(grep -c '^=== drivegen shard' "$vl.log")" = 2 ] || die "$vl.log does not show both runs"
if [ "$(cat "$T/held")" = frozen ]; then
    grep -q "shard_store_${victim}_of_$n: complete from an earlier run" "$vl.log" ||
        die "the rerun of task $victim did not resume from the checkpoint its first run wrote"
    resumed="killed mid-run and resumed from its checkpoints"
else
    resumed="cancelled after its shard was done (too fast to freeze)"
fi
grep -q '^start .* restart=1 ' "$vl.runs" || die "the rerun of task $victim is not a requeue ($vl.runs)"
[ -s "$logs/merge.log" ] || die "no merge log"
tail -n 1 "$logs/merge.runs" | grep -q '^end .* exit=0 ' || die "the merge did not end with exit 0"

release_files() { (cd "$1" && find . -type f | sed 's|^\./||' | grep -v '^report' | LC_ALL=C sort); }
[ "$(release_files "$T/ref/release")" = "$(release_files "$T/release")" ] || {
    diff <(release_files "$T/ref/release") <(release_files "$T/release") >&2 || true
    die "the merged release has other files than the unsharded one"
}
count=0
while read -r f; do
    cmp -s "$T/ref/release/$f" "$T/release/$f" || die "$f differs between the merged and unsharded release"
    count=$((count + 1))
done < <(release_files "$T/ref/release")
[ "$count" -gt 0 ] || die "the reference release is empty"

ok=1
say "ok: $count release files identical to the unsharded build; task $victim $resumed," \
    "requeued and merged; $((SECONDS - t_start))s in all"
