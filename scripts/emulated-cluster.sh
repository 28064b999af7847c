#!/usr/bin/env bash
# emulated-cluster.sh: run an MPI command on an emulated cluster of N hosts
# with k ranks each, on one Linux machine, using network namespaces.
#
# Each "host" is a network namespace with its own address (10.200.X.i/24 on a
# bridge this script creates) and, for every process Open MPI starts there,
# its own UTS hostname, so MPI_COMM_TYPE_SHARED, Open MPI's shared-memory
# transport and strata's node split all see N separate nodes. Traffic between
# hosts crosses veth links that can be shaped with tc netem. Everything this
# script creates (namespaces, veths, bridge, temp files) carries its pid in
# its name and is removed on every exit path.
#
# Needs root (or CAP_NET_ADMIN + CAP_SYS_ADMIN), iproute2, unshare and
# Open MPI. Without them it prints why and exits 77 ("skipped" for tests).
# See docs/EMULATED_CLUSTER.md.
set -u -o pipefail

prog=$(basename "$0")
SKIP=77

usage() {
  cat <<EOF
Usage: $prog [options] [mpirun options] -- COMMAND [ARGS...]

Runs COMMAND with mpirun on N emulated hosts x k ranks (network namespaces on
this machine) and exits with mpirun's exit status.

Cluster:
  --hosts N             number of emulated hosts (default 2, at most 16)
  --ranks-per-host K    ranks (hostfile slots) per host (default 2)
  -np P                 total ranks (default N*K)
  --env NAME[=VALUE]    give the ranks a variable (strata-launch's word for it)

Link shaping (tc netem on each host's veth; applies to traffic entering
each host, so every host-to-host packet is shaped once; on kernels without
netem, --rate alone is applied with tbf and --delay/--loss exit 77):
  --delay T             one-way added delay, e.g. 50us, 1ms
  --jitter T            delay variation (needs --delay)
  --rate R              bandwidth limit, e.g. 10gbit, 1gbit
  --loss P              packet loss, e.g. 0.1%
  --mtu M               MTU of the emulated links (default 1500)

Faults (for testing failure handling):
  --link-down I@S[+D]   take host I's link down S seconds after the start
                        (ip link set <veth> down), e.g. --link-down 2@3; with
                        +D bring it back up D seconds later (a flap; also
                        lets mpirun reach the host again to tear the job down)
  --stop-host I@S       SIGSTOP the ranks on host I after S seconds (not the
                        Open MPI daemon); SIGCONT is sent during clean-up

Other:
  --no-check            skip the pre-flight run that checks each host's
                        daemons see their own hostname and only their own address
  --keep-tc-stats       print tc statistics of each link after the run
  -v, --verbose         print the mpirun command line and the setup steps
  -h, --help            this help

Every argument before "--" that is not one of the above goes to mpirun
unchanged (e.g. --mca btl_base_verbose 30). If you do not pass
--bind-to, "--bind-to none" is added (emulated hosts share this machine's cores).
When the ranks outnumber this machine's CPUs (nproc), "--mca
mpi_yield_when_idle 1" is added unless you set mpi_yield_when_idle yourself:
each emulated host looks uncrowded to Open MPI, which would otherwise spin in
every blocking call and make each call wait for the scheduler's next tick.

Example:
  $prog --hosts 2 --ranks-per-host 2 --delay 50us --rate 10gbit \\
      --env STRATA_SPEC -- ./build/apps/bench/strata-bench -b 1M -e 64M -f 8 --baseline mpi -a xring

Environment: MPIRUN picks the mpirun binary (default: mpirun on PATH).
OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1 are set for you.

Exit status: COMMAND's (mpirun's) status; 77 if namespaces cannot be created
here (not root, no iproute2/unshare/mpirun, no permission); 2 for bad usage;
130/143 when interrupted.
EOF
}

die_usage() { echo "$prog: $*" >&2; echo "Try '$prog --help'." >&2; exit 2; }
skip() { echo "$prog: SKIP: $*" >&2; exit $SKIP; }
log() { echo "$prog: $*" >&2; }
vlog() { if [ "$verbose" = 1 ]; then log "$@"; fi; }

# --- arguments -----------------------------------------------------------------
hosts=2
per_host=2
np=""
delay=""
jitter=""
rate=""
loss=""
mtu=1500
check=1
verbose=0
tc_stats=0
link_down=""
stop_host=""
mpirun_extra=()
have_bind=0

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
need_value() { [ "$#" -ge 2 ] || die_usage "option $1 needs a value"; }

while [ "$#" -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --hosts) need_value "$@"; hosts=$2; shift 2 ;;
    --hosts=*) hosts=${1#*=}; shift ;;
    --ranks-per-host) need_value "$@"; per_host=$2; shift 2 ;;
    --ranks-per-host=*) per_host=${1#*=}; shift ;;
    -np|-n|--np) need_value "$@"; np=$2; shift 2 ;;
    --delay) need_value "$@"; delay=$2; shift 2 ;;
    --delay=*) delay=${1#*=}; shift ;;
    --jitter) need_value "$@"; jitter=$2; shift 2 ;;
    --jitter=*) jitter=${1#*=}; shift ;;
    --rate) need_value "$@"; rate=$2; shift 2 ;;
    --rate=*) rate=${1#*=}; shift ;;
    --loss) need_value "$@"; loss=$2; shift 2 ;;
    --loss=*) loss=${1#*=}; shift ;;
    --mtu) need_value "$@"; mtu=$2; shift 2 ;;
    --mtu=*) mtu=${1#*=}; shift ;;
    --link-down) need_value "$@"; link_down=$2; shift 2 ;;
    --link-down=*) link_down=${1#*=}; shift ;;
    --stop-host) need_value "$@"; stop_host=$2; shift 2 ;;
    --stop-host=*) stop_host=${1#*=}; shift ;;
    --no-check) check=0; shift ;;
    --keep-tc-stats) tc_stats=1; shift ;;
    -v|--verbose) verbose=1; shift ;;
    --) shift; break ;;
    --env) need_value "$@"; mpirun_extra+=(-x "$2"); shift 2 ;;
    --env=*) mpirun_extra+=(-x "${1#*=}"); shift ;;
    --bind-to|--bind-to=*) have_bind=1; mpirun_extra+=("$1"); shift ;;
    -H|--host|--hostfile|-hostfile|--machinefile|-machinefile|--default-hostfile)
      die_usage "$1 is set by this script (use --hosts and --ranks-per-host)" ;;
    *) mpirun_extra+=("$1"); shift ;;
  esac
done
[ "$#" -gt 0 ] || die_usage "no command given (put it after --)"

is_uint "$hosts" && [ "$hosts" -ge 1 ] && [ "$hosts" -le 16 ] || die_usage "--hosts must be 1..16, got '$hosts'"
is_uint "$per_host" && [ "$per_host" -ge 1 ] || die_usage "--ranks-per-host must be >= 1, got '$per_host'"
[ -z "$np" ] && np=$((hosts * per_host))
is_uint "$np" && [ "$np" -ge 1 ] || die_usage "-np must be >= 1, got '$np'"
is_uint "$mtu" && [ "$mtu" -ge 576 ] && [ "$mtu" -le 65535 ] || die_usage "--mtu must be 576..65535, got '$mtu'"
[ -n "$jitter" ] && [ -z "$delay" ] && die_usage "--jitter needs --delay"
parse_fault() {  # "I@S" -> sets fault_host fault_after
  local spec=$1 what=$2
  [[ "$spec" =~ ^([0-9]+)@([0-9]+(\.[0-9]+)?)(\+([0-9]+(\.[0-9]+)?))?$ ]] \
    || die_usage "$what wants HOST@SECONDS[+SECONDS], got '$spec'"
  fault_host=${BASH_REMATCH[1]}; fault_after=${BASH_REMATCH[2]}; fault_for=${BASH_REMATCH[5]}
  [ "$fault_host" -ge 1 ] && [ "$fault_host" -le "$hosts" ] || die_usage "$what: host must be 1..$hosts, got $fault_host"
}
if [ -n "$link_down" ]; then parse_fault "$link_down" --link-down; ld_host=$fault_host; ld_after=$fault_after; ld_for=$fault_for; fi
if [ -n "$stop_host" ]; then
  parse_fault "$stop_host" --stop-host; st_host=$fault_host; st_after=$fault_after
  [ -z "$fault_for" ] || die_usage "--stop-host takes HOST@SECONDS (no +D)"
fi

# --- can we do this here? --------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, veth, bridge, tc); run it as root or in a privileged container"
for tool in ip unshare "${MPIRUN:-mpirun}" hostname; do
  command -v "$tool" >/dev/null 2>&1 || skip "'$tool' not found (install iproute2, util-linux and Open MPI)"
done
if [ -n "$delay$rate$loss" ]; then command -v tc >/dev/null 2>&1 || skip "'tc' not found (install iproute2) but link shaping was asked for"; fi
mpirun_bin=${MPIRUN:-$(command -v mpirun)}
# The hosts are reached through Open MPI's rsh agent and --mca settings
# below; hydra (MPICH, Intel MPI) would need its own (-launcher-exec, -f).
"$mpirun_bin" --version 2>&1 | grep -q "Open MPI" ||
  skip "$mpirun_bin is not Open MPI's mpirun: the emulated cluster drives Open MPI only (docs/MPI.md)"
# Open MPI refuses to run as root without these; this script only runs as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# --- names (all include our pid) -------------------------------------------------
id=$$
bridge="stbr$id"                 # interface names: at most 15 characters
ns_name() { echo "strata-$id-h$1"; }
veth_name() { echo "stv${id}h$1"; }
host_name() { echo "sthost$id-$1"; }   # UTS hostname inside host i
[ "${#bridge}" -le 15 ] && [ "$(veth_name "$hosts" | wc -c)" -le 16 ] || skip "pid $id too long for interface names"

tmp=""
subnet_x=""
created_ns=()
created_bridge=0
mpirun_pid=""
fault_pids=()
stopped_host=""
cleaned=0

cleanup() {
  [ "$cleaned" = 1 ] && return
  cleaned=1
  local pid i ns
  for pid in "${fault_pids[@]}"; do kill "$pid" 2>/dev/null; done
  if [ -n "$mpirun_pid" ] && kill -0 "$mpirun_pid" 2>/dev/null; then
    kill -TERM "$mpirun_pid" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$mpirun_pid" 2>/dev/null || break; sleep 0.3; done
    kill -KILL "$mpirun_pid" 2>/dev/null
  fi
  for ns in "${created_ns[@]}"; do
    # Processes left in our namespaces (orted, ranks) were started by this
    # run: continue stopped ones, then end them by pid.
    pids=$(ip netns pids "$ns" 2>/dev/null)
    if [ -n "$pids" ]; then
      kill -CONT $pids 2>/dev/null
      kill -TERM $pids 2>/dev/null
      sleep 0.5
      pids=$(ip netns pids "$ns" 2>/dev/null)
      [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    fi
    ip netns del "$ns" 2>/dev/null || log "warning: could not delete namespace $ns"
  done
  # Deleting a namespace deletes the veth end inside it and so the pair;
  # remove any root-side end that survived, then the bridge.
  for ((i = 1; i <= hosts; i++)); do
    ip link show "$(veth_name "$i")" >/dev/null 2>&1 && ip link del "$(veth_name "$i")" 2>/dev/null
  done
  if [ "$created_bridge" = 1 ]; then
    ip link del "$bridge" 2>/dev/null || log "warning: could not delete bridge $bridge"
  fi
  [ -n "$tmp" ] && rm -rf "$tmp"
  vlog "cleaned up (namespaces, veths, bridge $bridge, $tmp)"
}
on_signal() {
  local sig=$1 code=$2
  log "interrupted by SIG$sig; cleaning up"
  trap - INT TERM HUP
  cleanup
  exit "$code"
}
trap cleanup EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

tmp=$(mktemp -d "/tmp/strata-cluster-$id.XXXXXX") || skip "cannot create a temporary directory"

# --- pick a free 10.200.X.0/24 ----------------------------------------------------
# Concurrent runs each take their own X; the lock makes pick-and-claim atomic.
lock=/run/lock/strata-emulated-cluster.lock
[ -d /run/lock ] || lock="/tmp/strata-emulated-cluster.lock"
exec 9>"$lock" || skip "cannot open lock file $lock"
if command -v flock >/dev/null 2>&1; then flock -w 30 9 || skip "timed out waiting for $lock"; fi

if ! ip link add "$bridge" type bridge 2>"$tmp/err"; then
  skip "cannot create a bridge ($(cat "$tmp/err")); network namespaces need root with CAP_NET_ADMIN"
fi
created_bridge=1
used=$(ip -4 -o addr show 2>/dev/null; ip -4 route show 2>/dev/null)
start=$((id % 250 + 1))
for ((k = 0; k < 250; k++)); do
  x=$(((start - 1 + k) % 250 + 1))
  if ! grep -q "10\.200\.$x\." <<<"$used"; then subnet_x=$x; break; fi
done
[ -n "$subnet_x" ] || skip "no free 10.200.X.0/24 subnet (250 runs at once?)"
subnet="10.200.$subnet_x.0/24"
bridge_ip="10.200.$subnet_x.254"
host_ip() { echo "10.200.$subnet_x.$1"; }

ip addr add "$bridge_ip/24" dev "$bridge" || skip "cannot add $bridge_ip to $bridge"
ip link set "$bridge" mtu "$mtu" up || skip "cannot bring $bridge up"
flock -u 9 2>/dev/null
exec 9>&-
vlog "bridge $bridge $bridge_ip/24"

# --- link shaping -----------------------------------------------------------------
# netem does delay, jitter, loss and rate. Kernels built without netem
# (CONFIG_NET_SCH_NETEM) can still limit the rate with tbf; asking for a
# delay or loss there is refused with exit 77 rather than silently ignored.
shaper=""          # "netem" or "tbf", decided on the first link
rate_bytes() {     # tc rate ("10gbit", "500mbit", "1gbps", "100000bit") -> bytes/s
  local r=${1,,} n unit
  [[ "$r" =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?)(bit|bps)$ ]] || return 1
  n=${BASH_REMATCH[1]}; unit=${BASH_REMATCH[3]}
  awk -v n="$n" -v u="$unit" -v b="${BASH_REMATCH[4]}" 'BEGIN {
    m = 1; if (u == "k") m = 1e3; else if (u == "m") m = 1e6; else if (u == "g") m = 1e9; else if (u == "t") m = 1e12;
    v = n * m; if (b == "bit") v /= 8; printf "%d\n", v }'
}
shape_link() {
  local dev=$1 netem=() bps burst
  if [ -z "$shaper" ] || [ "$shaper" = netem ]; then
    netem=(limit 1000000)
    if [ -n "$delay" ]; then netem+=(delay "$delay"); [ -n "$jitter" ] && netem+=("$jitter"); fi
    [ -n "$rate" ] && netem+=(rate "$rate")
    [ -n "$loss" ] && netem+=(loss "$loss")
    if tc qdisc add dev "$dev" root netem "${netem[@]}" 2>"$tmp/err"; then shaper=netem; return 0; fi
    if [ -n "$shaper" ] || ! grep -qi "unknown" "$tmp/err"; then
      log "tc qdisc add dev $dev root netem ${netem[*]} failed: $(cat "$tmp/err")"; exit 2
    fi
    # This kernel has no netem.
    if [ -n "$delay$loss" ]; then
      skip "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), so --delay/--jitter/--loss cannot be emulated here; --rate alone works (tbf)"
    fi
    shaper=tbf
    log "no netem in this kernel; limiting the rate with tbf"
  fi
  bps=$(rate_bytes "$rate") || die_usage "--rate: cannot parse '$rate' (use e.g. 10gbit, 500mbit, 1gbps)"
  # Bucket: 1 ms worth of bytes, at least 256 KiB (veth passes GSO packets of up to 64 KiB).
  burst=$((bps / 1000)); [ "$burst" -lt 262144 ] && burst=262144
  tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 100ms 2>"$tmp/err" \
    || { log "tc qdisc add dev $dev root tbf rate $rate burst $burst latency 100ms failed: $(cat "$tmp/err")"; exit 2; }
}

# --- hosts ------------------------------------------------------------------------
for ((i = 1; i <= hosts; i++)); do
  ns=$(ns_name "$i"); veth=$(veth_name "$i")
  if ! ip netns add "$ns" 2>"$tmp/err"; then
    skip "cannot create network namespace $ns ($(cat "$tmp/err"))"
  fi
  created_ns+=("$ns")
  ip link add "$veth" mtu "$mtu" type veth peer name eth0 netns "$ns" 2>"$tmp/err" \
    || skip "cannot create veth pair $veth ($(cat "$tmp/err"))"
  ip link set "$veth" master "$bridge" up || skip "cannot attach $veth to $bridge"
  ip -n "$ns" addr add "$(host_ip "$i")/24" dev eth0 || skip "cannot address eth0 in $ns"
  ip -n "$ns" link set eth0 mtu "$mtu" up || skip "cannot bring eth0 up in $ns"
  ip -n "$ns" link set lo up || skip "cannot bring lo up in $ns"
  [ -n "$delay$rate$loss" ] && shape_link "$veth"
  vlog "host $i: netns $ns, hostname $(host_name "$i"), $(host_ip "$i") on $veth"
done

# Each namespace must see exactly its own address (plus loopback): that is
# what its Open MPI daemons will find when they enumerate interfaces.
for ((i = 1; i <= hosts; i++)); do
  ns=$(ns_name "$i")
  seen=$(ip -n "$ns" -4 -o addr show | awk '{print $4}' | sort | tr '\n' ' ')
  want=$(printf '%s\n' 127.0.0.1/8 "$(host_ip "$i")/24" | sort | tr '\n' ' ')
  if [ "$seen" != "$want" ]; then
    log "host $i ($ns) sees addresses '$seen', expected '$want'"
    exit 1
  fi
done

# Wait until every host answers on the bridge (ARP/bridge learning done).
if command -v ping >/dev/null 2>&1; then
  for ((i = 1; i <= hosts; i++)); do
    ip netns exec "$(ns_name "$i")" ping -c 1 -W 2 "$bridge_ip" >/dev/null 2>&1 \
      || log "warning: host $i cannot ping $bridge_ip yet"
  done
fi

# --- launcher and hostfile --------------------------------------------------------
# Open MPI runs "$nsrsh HOST CMD..." instead of ssh. HOST is one of our
# addresses; the launcher enters that host's namespace and a new UTS
# namespace with the host's name, then runs the daemon command.
nsrsh="$tmp/nsrsh"
{
  echo '#!/bin/sh'
  echo '# Generated by emulated-cluster.sh: rsh agent that enters an emulated host.'
  echo 'h="$1"; shift'
  echo 'case "$h" in'
  for ((i = 1; i <= hosts; i++)); do
    echo "  $(host_ip "$i")|$(host_name "$i")) ns=$(ns_name "$i"); name=$(host_name "$i") ;;"
  done
  echo '  *) echo "nsrsh: unknown emulated host $h" >&2; exit 255 ;;'
  echo 'esac'
  echo 'exec ip netns exec "$ns" unshare --uts sh -c "hostname $name && $*"'
} >"$nsrsh"
chmod 755 "$nsrsh"

hostfile="$tmp/hostfile"
for ((i = 1; i <= hosts; i++)); do echo "$(host_ip "$i") slots=$per_host"; done >"$hostfile"

mpirun_common=(
  --hostfile "$hostfile"
  --mca plm_rsh_agent "$nsrsh"
  --mca plm_rsh_no_tree_spawn 1
  --mca routed direct
  --mca oob_tcp_if_include "$subnet"
  --mca btl_tcp_if_include "$subnet"
  --mca btl self,vader,tcp
)

# --- pre-flight: one process per host reports its hostname and addresses --------
if [ "$check" = 1 ]; then
  pf_out="$tmp/preflight"
  # shellcheck disable=SC2016  # expanded by the remote sh
  if ! timeout 60 "$mpirun_bin" "${mpirun_common[@]}" -np "$hosts" --map-by ppr:1:node --bind-to none \
      sh -c 'echo "$(hostname) $(ip -4 -o addr show scope global | awk "{print \$4}" | tr "\n" " ")"' \
      >"$pf_out" 2>&1; then
    log "pre-flight mpirun failed:"; sed 's/^/  /' "$pf_out" >&2
    exit 1
  fi
  for ((i = 1; i <= hosts; i++)); do
    line="$(host_name "$i") $(host_ip "$i")/24 "
    if ! grep -qxF "$line" "$pf_out"; then
      log "pre-flight: host $i should report '$line'; got:"; sed 's/^/  /' "$pf_out" >&2
      exit 1
    fi
  done
  [ "$(sort -u "$pf_out" | wc -l)" = "$hosts" ] || { log "pre-flight: unexpected output:"; cat "$pf_out" >&2; exit 1; }
  vlog "pre-flight ok: each host's daemon has its own hostname and only its own address"
fi

shaping="none"
[ -n "$delay$rate$loss" ] && shaping="$shaper${delay:+ delay $delay}${jitter:+ $jitter}${rate:+ rate $rate}${loss:+ loss $loss} on each host's link"
log "$hosts hosts x $per_host ranks ($np ranks), subnet $subnet, links: $shaping"
for ((i = 1; i <= hosts; i++)); do
  log "  host $i: $(host_name "$i") $(host_ip "$i") netns $(ns_name "$i") link $(veth_name "$i")"
done

# --- faults ---------------------------------------------------------------------
if [ -n "$link_down" ]; then
  ( sleep "$ld_after"; log "fault: link of host $ld_host ($(veth_name "$ld_host")) down"
    ip link set "$(veth_name "$ld_host")" down
    if [ -n "$ld_for" ]; then
      sleep "$ld_for"; log "fault: link of host $ld_host ($(veth_name "$ld_host")) up again"
      ip link set "$(veth_name "$ld_host")" up
    fi ) &
  fault_pids+=($!)
fi
if [ -n "$stop_host" ]; then
  ( sleep "$st_after"; pids=""
    # The ranks only: the Open MPI daemon (and its sh/unshare wrappers) keep
    # running so that mpirun can still tear the job down.
    for pid in $(ip netns pids "$(ns_name "$st_host")"); do
      case "$(cat "/proc/$pid/comm" 2>/dev/null)" in orted|sh|unshare|"") ;; *) pids="$pids $pid" ;; esac
    done
    log "fault: SIGSTOP to host $st_host's ranks: pids$pids"
    [ -n "$pids" ] && kill -STOP $pids ) &
  fault_pids+=($!)
fi

# --- run ------------------------------------------------------------------------
cmd=("$mpirun_bin" "${mpirun_common[@]}" -np "$np")
[ "$have_bind" = 0 ] && cmd+=(--bind-to none)
# Open MPI yields the core in its progress loop only on a node it knows to be
# oversubscribed, and each emulated host has as many slots as ranks. With
# more ranks than CPUs here, a rank spinning in MPI_Barrier or MPI_Wait keeps
# the core its peer needs until the scheduler's tick (4 ms at 250 Hz): every
# small call then took 4-8 ms instead of about 0.1 ms (docs/EMULATED_CLUSTER.md).
cpus=$(nproc 2>/dev/null || echo 1)
if [ "$np" -gt "$cpus" ] && [ -z "${OMPI_MCA_mpi_yield_when_idle:-}" ] &&
    [[ " ${mpirun_extra[*]} " != *" mpi_yield_when_idle "* ]]; then
  cmd+=(--mca mpi_yield_when_idle 1)
  log "$np ranks on $cpus CPUs: Open MPI yields when idle (--mca mpi_yield_when_idle 1)"
fi
cmd+=("${mpirun_extra[@]}" "$@")
vlog "running: ${cmd[*]}"
# In the background so that INT/TERM reach our trap at once; mpirun gets
# them forwarded by cleanup.
"${cmd[@]}" &
mpirun_pid=$!
wait "$mpirun_pid"
status=$?
# wait returns > 128 when a trapped signal interrupted it; the trap exits.
mpirun_pid=""

if [ "$tc_stats" = 1 ] && [ -n "$delay$rate$loss" ]; then
  for ((i = 1; i <= hosts; i++)); do
    log "tc statistics of $(veth_name "$i") (into host $i):"
    tc -s qdisc show dev "$(veth_name "$i")" | sed 's/^/  /' >&2
  done
fi
exit "$status"
