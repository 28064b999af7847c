#!/usr/bin/env bash
# A one-machine Slurm cluster, so that `srun` and `sbatch` can be tried (and
# tested) on a machine without Slurm: munged, slurmctld and one slurmd that
# describes this machine's real cores and memory (`slurmd -C`), in one
# partition "local", with MpiDefault=pmix.
#
#   scripts/slurm-local.sh run CMD [ARGS...]   start, run CMD with SLURM_CONF
#                                              set, stop; exits with CMD's status
#   eval "$(scripts/slurm-local.sh start)"     start and leave it running; prints
#                                              "export SLURM_CONF=..." on stdout
#   scripts/slurm-local.sh stop                cancel its jobs, stop its daemons,
#                                              delete its directory
#   scripts/slurm-local.sh status              sinfo of the running cluster
#
# Everything (slurm.conf, a fresh munge key and munged socket, state, spool,
# logs) lives in one private directory: `run` makes a new one with mktemp
# (so concurrent runs do not meet), `start`/`status`/`stop` use
# $STRATA_SLURM_DIR (default ${TMPDIR:-/tmp}/strata-slurm-local). Clients find
# the cluster through SLURM_CONF only, so a real /etc/slurm and /etc/munge
# are never read or changed. The two TCP ports (slurmctld, slurmd) are the
# first free pair from a random port in 16817-17815 up (STRATA_SLURM_PORT
# fixes where the first try starts); a pair taken meanwhile by another
# cluster starting at the same moment is detected and the start retried
# from another random port.
#
# Needs root (the daemons run as root: SlurmUser=root). Installs munge,
# slurmctld, slurmd and slurm-client with apt-get when missing (Debian 12):
# here rather than in scripts/setup.sh's list because only this script and
# the slurm test need them, and scripts/bench.sh should not pull in a batch
# system. While installing, a temporary policy-rc.d keeps the packages from
# starting the system's own munged/slurmd (this script runs its own).
#
# Environment: STRATA_SLURM_WAIT (seconds to wait for the node to be idle,
# default 60), STRATA_SLURM_KEEP=1 (stop leaves the directory, for its logs).
# Exit codes: 2 usage (or a STRATA_SLURM_DIR that is not ours), 3 could not
# start (the daemons' logs are printed), 77 not root or Slurm cannot be
# installed (meson's "skipped"); `run` otherwise exits with CMD's status.
set -euo pipefail

readonly WAIT=${STRATA_SLURM_WAIT:-60}
SLURM_PACKAGES=(munge slurmctld slurmd slurm-client)

say() { echo "slurm-local: $*" >&2; }

usage() {
  sed -n '/^#   /p' "${BASH_SOURCE[0]}" | sed 's/^#//' >&2
  exit 2
}

# --- installation ------------------------------------------------------------

install_missing() {
  local missing=() p
  for p in "${SLURM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]}"
  # Deny service starts during the install only if no policy exists already
  # (Docker images ship one); ours is removed again whatever happens.
  local policy=/usr/sbin/policy-rc.d added=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# slurm-local.sh: temporary, while installing Slurm\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    added=1
  fi
  local status=0
  {
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"
  } >"${TMPDIR:-/tmp}/slurm-local-apt.log" 2>&1 || status=$?
  [ $added -eq 1 ] && rm -f "$policy"
  if [ $status -ne 0 ]; then
    cat "${TMPDIR:-/tmp}/slurm-local-apt.log" >&2
    say "could not install ${missing[*]}"
    return 1
  fi
  rm -f "${TMPDIR:-/tmp}/slurm-local-apt.log"
}

# --- configuration -----------------------------------------------------------

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Two consecutive free TCP ports from $1 up (slurmctld, slurmd).
free_ports() {
  local p=$1
  while port_in_use "$p" || port_in_use $((p + 1)); do
    p=$((p + 2))
    [ $p -lt 65000 ] || { say "no free port pair found"; return 1; }
  done
  echo "$p $((p + 1))"
}

# slurm.conf for this machine. The node line is `slurmd -C`'s own view of
# the hardware (CPUs, sockets, cores, threads, RealMemory), so slurmd never
# finds less than configured and drains the node.
write_config() {
  local dir=$1 first_port=$2 host ctld_port slurmd_port node
  host=$(hostname -s)
  read -r ctld_port slurmd_port < <(free_ports "$first_port") || true
  [ -n "${slurmd_port:-}" ] || return 1
  node=$(slurmd -C | sed -n 's/^NodeName=[^ ]* //p' | head -1)
  [ -n "$node" ] || { say "slurmd -C printed no node line"; return 1; }
  mkdir -p "$dir"/{munge,ctld,spool,tmp,log}
  : >"$dir/plugstack.conf"  # not /etc/slurm/plugstack.conf
  cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm-local.sh: a one-machine cluster in $dir.
ClusterName=strata-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/log/slurmctld.pid
SlurmdPidFile=$dir/log/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
# The PMIx plugin keeps its per-job directories under TmpFS: private too.
TmpFS=$dir/tmp
# No cgroups: they are often absent or read-only in containers and VMs.
# task/affinity binds each task to its cores with sched_setaffinity (srun
# --cpu-bind works); real clusters add proctrack/cgroup and task/cgroup.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
KillWait=5
# Finished jobs stay visible to scontrol for 5 minutes (the test reads them).
MinJobAge=300
InactiveLimit=0
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$host NodeAddr=127.0.0.1 $node State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

# --- daemons -----------------------------------------------------------------

# True when $1 holds a slurm.conf this script wrote (so it may delete $1).
ours() { head -1 "$1/slurm.conf" 2>/dev/null | grep -q '^# Written by scripts/slurm-local.sh'; }

# Makes $1 a fresh private directory; refuses one that is not empty and not
# a stopped cluster of ours (STRATA_SLURM_DIR could name anything).
claim_dir() {
  local dir=$1
  if [ -e "$dir" ]; then
    if ours "$dir"; then
      rm -rf "$dir"
    elif [ -n "$(ls -A "$dir" 2>/dev/null)" ] || [ ! -d "$dir" ]; then
      say "$dir exists and is not a local cluster's directory; choose another STRATA_SLURM_DIR"
      exit 2
    else
      rmdir "$dir"
    fi
  fi
  mkdir -p "$(dirname "$dir")"
  mkdir -m 700 "$dir"
}

# The daemons run in the foreground (-D/-F), each in its own session (so a
# Ctrl-C or a test runner's kill of this script's process group reaches them
# only through stop_cluster), and their pids go to $dir/pids as "name pid":
# exact pids from the start, no waiting for pid files.
launch() {
  local dir=$1 name=$2
  shift 2
  setsid "$@" </dev/null >>"$dir/log/$name.console" 2>&1 &
  local pid=$! i
  echo "$name $pid" >>"$dir/pids"
  # Until it has exec'd, the child is still called bash or setsid, and
  # daemon_pid would take it for gone: wait (briefly) for its own name.
  for ((i = 0; i < 100; i++)); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] && return 0
    running "$pid" || return 0
    sleep 0.05
  done
}

# True while process $1 exists and is not a zombie (a daemon that died
# while this script, its parent, has not yet reaped it).
running() {
  local state
  state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
  [ -n "$state" ] && [ "$state" != Z ]
}

# The pid of daemon $2 of cluster $1 while it runs; nothing once it has
# ended (a reused pid is not taken for it: the command name must match).
daemon_pid() {
  local pid
  pid=$(awk -v n="$2" '$1 == n { print $2 }' "$1/pids" 2>/dev/null | tail -1)
  if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && running "$pid"; then
    echo "$pid"
  fi
  return 0
}

show_logs() {
  local dir=$1 f
  for f in "$dir"/munge/munged.log "$dir"/log/*.log "$dir"/log/*.console; do
    [ -s "$f" ] && { echo "---- $f (last 20 lines)" >&2; tail -n 20 "$f" >&2; }
  done
  return 0
}

start_daemons() {
  local dir=$1 name
  export SLURM_CONF=$dir/slurm.conf
  # A key for this cluster only. munged refuses to run as root unless forced.
  mungekey --create --keyfile="$dir/munge/munge.key" 2>/dev/null ||
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 600 "$dir/munge/munge.key"
  launch "$dir" munged munged --foreground --force --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  # slurmctld and slurmd authenticate through munged as soon as they start.
  local deadline=$((SECONDS + 10))
  until [ -S "$dir/munge/munge.socket" ]; do
    if [ -z "$(daemon_pid "$dir" munged)" ] || [ $SECONDS -ge $deadline ]; then
      say "munged did not start"
      return 1
    fi
    sleep 0.1
  done
  launch "$dir" slurmctld slurmctld -D
  launch "$dir" slurmd slurmd -D
  local state=""
  deadline=$((SECONDS + WAIT))
  while [ $SECONDS -lt $deadline ]; do
    state=$(sinfo -h -o %T 2>/dev/null || true)
    [ "$state" = idle ] && return 0
    # A daemon that died (a port taken meanwhile, a bad config) will not
    # come back: say so now rather than at the deadline.
    for name in munged slurmctld slurmd; do
      [ -n "$(daemon_pid "$dir" "$name")" ] || { say "$name exited"; return 1; }
    done
    sleep 0.5
  done
  say "the node is '${state:-not reported}' after ${WAIT}s, not idle"
  return 1
}

# Processes that belong to this cluster's jobs: slurmstepd inherits
# slurmd's environment, so its SLURM_CONF names our directory.
stepd_pids() {
  local dir=$1 p
  for p in $(pgrep -x slurmstepd || true); do
    running "$p" || continue
    { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$dir/slurm.conf" && echo "$p"
  done
  return 0
}

stop_cluster() {
  local dir=$1
  if ! ours "$dir"; then  # never started, or stopped already
    rmdir "$dir" 2>/dev/null || true  # made, but failed before slurm.conf
    return 0
  fi
  export SLURM_CONF=$dir/slurm.conf
  # Cancel what is still queued or running and give it KillWait to end.
  if [ -n "$(daemon_pid "$dir" slurmctld)" ]; then
    local jobs deadline=$((SECONDS + 15))
    jobs=$(squeue -h -t PD,CF,R,S -o %A 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      say "cancelling jobs ${jobs//$'\n'/ }"
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
    fi
    # Completing jobs too: their slurmstepd is still cleaning up.
    while [ -n "$(squeue -h -o %A 2>/dev/null || true)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  fi
  local pids="" p name
  for name in slurmd slurmctld munged; do
    p=$(daemon_pid "$dir" "$name")
    [ -n "$p" ] && pids+="$p "
  done
  pids+=$(stepd_pids "$dir" | tr '\n' ' ')
  # shellcheck disable=SC2086
  if [ -n "${pids// /}" ]; then kill $pids 2>/dev/null || true; fi
  local deadline=$((SECONDS + 15)) left
  while :; do
    left=""
    for p in $pids; do running "$p" && left+="$p "; done
    [ -z "$left" ] && break
    if [ $SECONDS -ge $deadline ]; then
      say "still running after 15 s, killing: $left"
      # shellcheck disable=SC2086
      kill -9 $left 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  if [ "${STRATA_SLURM_KEEP:-0}" = 1 ]; then
    say "stopped; logs kept in $dir"
  else
    rm -rf "$dir"
  fi
}

start_cluster() {
  local dir=$1 try first_port
  for try in 1 2 3 4 5; do
    # A random start makes two clusters starting at once unlikely to meet.
    first_port=$((16817 + 2 * (RANDOM % 500)))
    [ $try -eq 1 ] && first_port=${STRATA_SLURM_PORT:-$first_port}
    write_config "$dir" "$first_port" || { say "could not write $dir/slurm.conf"; return 3; }
    if start_daemons "$dir"; then
      say "node $(hostname -s) idle ($(sinfo -h -o '%c CPUs, %m MB')), partition local, config $dir/slurm.conf"
      return 0
    fi
    # Another cluster starting at the same moment may take the ports we
    # found free: start again on others.
    if [ $try -lt 5 ] && grep -qs 'Address already in use' "$dir"/log/*.log; then
      say "a port was taken meanwhile; starting again on other ports"
      STRATA_SLURM_KEEP=0 stop_cluster "$dir"
      mkdir -m 700 "$dir"
      continue
    fi
    break
  done
  show_logs "$dir"
  stop_cluster "$dir"
  return 3
}

preflight() {
  if [ "$(id -u)" -ne 0 ]; then
    say "needs root (the daemons run as SlurmUser=root)"
    exit 77
  fi
  install_missing || exit 77
}

# --- commands ----------------------------------------------------------------

cmd=${1:-}
[ $# -gt 0 ] && shift
default_dir=${STRATA_SLURM_DIR:-${TMPDIR:-/tmp}/strata-slurm-local}
case $cmd in
  run)
    [ $# -gt 0 ] || usage
    preflight
    if [ -n "${STRATA_SLURM_DIR:-}" ]; then
      dir=$STRATA_SLURM_DIR
      if ours "$dir" && [ -n "$(daemon_pid "$dir" slurmctld)" ]; then
        say "a cluster is already running in $dir; stop it or choose another STRATA_SLURM_DIR"
        exit 2
      fi
      claim_dir "$dir"
    else
      dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-slurm.XXXXXX")
    fi
    # From here on, whatever happens (CMD fails, Ctrl-C), the cluster goes.
    trap 'stop_cluster "$dir"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
    start_cluster "$dir" || exit $?
    export SLURM_CONF=$dir/slurm.conf
    status=0
    "$@" || status=$?
    exit $status
    ;;
  start)
    preflight
    dir=$default_dir
    if ours "$dir" && [ -n "$(daemon_pid "$dir" slurmctld)" ]; then
      say "already running in $dir"
    else
      claim_dir "$dir"
      trap 'stop_cluster "$dir"; exit 130' INT TERM HUP
      start_cluster "$dir" || exit $?
      trap - INT TERM HUP
    fi
    echo "export SLURM_CONF=$dir/slurm.conf"
    ;;
  stop)
    ours "$default_dir" || say "no cluster in $default_dir"
    stop_cluster "$default_dir"
    ;;
  status)
    ours "$default_dir" || { say "not running (no $default_dir/slurm.conf)"; exit 1; }
    SLURM_CONF=$default_dir/slurm.conf sinfo
    ;;
  *) usage ;;
esac
