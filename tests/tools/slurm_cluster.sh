#!/usr/bin/env bash
# A single-node Slurm cluster for the tests: `start DIR` starts munged, slurmctld and slurmd on
# this host with a configuration in DIR (private ports, sockets, spool and state), and prints
# the SLURM_CONF to export; `stop DIR` stops them. Debian's slurm-wlm and munge. The daemons
# need root (slurmd starts jobs as their user); without it, or without the programs, `start`
# exits 3 saying why.
set -euo pipefail
what=${1:?usage: slurm_cluster.sh start|stop DIR}
dir=${2:?usage: slurm_cluster.sh start|stop DIR}

case "$what" in
  start)
    for prog in munged slurmctld slurmd sbatch; do
      command -v "$prog" >/dev/null || { echo "slurm_cluster: no $prog (install Debian's slurm-wlm and munge)" >&2; exit 3; }
    done
    [ "$(id -u)" -eq 0 ] || { echo "slurm_cluster: slurmd must run as root to start jobs, and this is $(id -un)" >&2; exit 3; }
    mkdir -p "$dir"/{state,spool,munge}
    chmod 700 "$dir/munge"
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
      --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" ||
      { echo "slurm_cluster: munged did not start: $(tail -1 "$dir/munge/munged.log" 2>/dev/null)" >&2; exit 3; }
    host=$(hostname -s)
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
    base=$((30000 + RANDOM % 20000))
    cat >"$dir/slurm.conf" <<CONF
ClusterName=opcosttest
SlurmctldHost=$host
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
    export SLURM_CONF=$dir/slurm.conf
    slurmctld -f "$dir/slurm.conf" -i || { echo "slurm_cluster: slurmctld did not start: $(tail -3 "$dir/slurmctld.log")" >&2; exit 3; }
    slurmd -f "$dir/slurm.conf" || { echo "slurm_cluster: slurmd did not start: $(tail -3 "$dir/slurmd.log")" >&2; exit 3; }
    for _ in $(seq 60); do
      sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' && { echo "$dir/slurm.conf"; exit 0; }
      sleep 0.5
    done
    echo "slurm_cluster: the node did not come up: $(sinfo -h -o '%t %E' 2>&1 | head -1); $(tail -2 "$dir/slurmd.log" 2>/dev/null)" >&2
    exit 3
    ;;
  stop)
    for f in slurmd slurmctld munge/munged; do
      [ -f "$dir/$f.pid" ] && kill "$(cat "$dir/$f.pid")" 2>/dev/null || true
    done
    ;;
  *)
    echo "usage: slurm_cluster.sh start|stop DIR" >&2; exit 2 ;;
esac
