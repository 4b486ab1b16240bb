#!/usr/bin/env bash
# Samples the host while a run goes on, from outside the agent's process:
#   host_sampler.sh AGENT INTERVAL_S > samples.txt
# One line per sample: unix time, mean CPU MHz, a fresh CPU-only agent
# process's LibTorch dispatch rate (ops/s) and single-thread CPU score, then
# /proc/stat's aggregate cpu line (user nice system idle iowait irq softirq
# steal ...). A rate that falls here as it falls inside the agent is the
# machine; one that stays is the agent's process.
set -u
AGENT=${1:?agent}
INTERVAL=${2:-20}
while true; do
  ts=$(date +%s.%N)
  mhz=$(awk '/cpu MHz/{s+=$4;n++} END{if(n) printf "%.0f", s/n; else print "nan"}' /proc/cpuinfo)
  fp=$(timeout 30 "$AGENT" fingerprint --device cpu --threads 1 --name probe 2>/dev/null |
       python3 -c 'import json,sys; m=json.load(sys.stdin)["measured"]; print("%.4g %.4g" % (m["dispatch_ops_per_s"], m["cpu_single_thread_score"]))' 2>/dev/null || echo "nan nan")
  echo "$ts $mhz $fp $(head -1 /proc/stat)"
  sleep "$INTERVAL"
done
