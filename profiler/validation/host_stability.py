#!/usr/bin/env python3
"""How steady is this host's dispatch speed, and does pinning the thread help?

Alternates blocks of tiny CUDA ops (queued without a sync, as a training loop
queues them) between two modes - the process free to run on every core, and
pinned to one core of the GPU's NUMA node - for a fixed wall time, and writes
one CSV row per block: time, mode, the CPU the thread was on, ops/s.
Summary on stdout: per mode the median, p10-p90 spread and the drift (first
vs last quarter of the run).

  host_stability.py --seconds 120 --out host.csv
"""
import argparse, csv, os, statistics, subprocess, time

import torch


def gpu_local_cpus():
    try:
        bus = subprocess.run(['nvidia-smi', '--query-gpu=pci.bus_id', '--format=csv,noheader'],
                             capture_output=True, text=True, check=True).stdout.split()[0]
        bus = bus.lower()[-12:]  # nvidia-smi prints 8 hex digits of domain
        with open(f'/sys/bus/pci/devices/{bus}/local_cpulist') as f:
            spec = f.read().strip()
        cpus = []
        for part in spec.split(','):
            lo, _, hi = part.partition('-')
            cpus += list(range(int(lo), int(hi or lo) + 1))
        return cpus
    except Exception as error:  # no sysfs entry: every CPU is local
        print('local_cpulist unavailable:', error)
        return sorted(os.sched_getaffinity(0))


def current_cpu():
    with open('/proc/self/stat') as f:
        return int(f.read().rsplit(')', 1)[1].split()[36])


def block(x, ops):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(ops):
        x.add_(1.0)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return ops / (t1 - t0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--seconds', type=float, default=120)
    parser.add_argument('--ops', type=int, default=2000)
    parser.add_argument('--out', required=True)
    args = parser.parse_args()
    every = sorted(os.sched_getaffinity(0))
    local = gpu_local_cpus()
    pin = [local[len(local) // 2]]
    print(f'cpus {len(every)}; gpu-local {local}; pinned mode uses {pin}')
    x = torch.zeros(16, device='cuda')
    for _ in range(5):
        block(x, args.ops)
    rows, start = [], time.time()
    while time.time() - start < args.seconds:
        for mode, cpus in (('free', every), ('pinned', pin)):
            os.sched_setaffinity(0, cpus)
            block(x, 200)  # settle on the new core
            rate = block(x, args.ops)
            rows.append((round(time.time() - start, 3), mode, current_cpu(), rate))
    os.sched_setaffinity(0, every)
    with open(args.out, 'w', newline='') as f:
        writer = csv.writer(f)
        writer.writerow(['t_s', 'mode', 'cpu', 'ops_per_s'])
        writer.writerows(rows)
    for mode in ('free', 'pinned'):
        rates = [r[3] for r in rows if r[1] == mode]
        q = max(1, len(rates) // 4)
        deciles = statistics.quantiles(rates, n=10)
        print(f'{mode}: blocks {len(rates)} median {statistics.median(rates):.0f} ops/s '
              f'p10-p90 {deciles[0]:.0f}-{deciles[-1]:.0f} '
              f'first quarter {statistics.median(rates[:q]):.0f} '
              f'last quarter {statistics.median(rates[-q:]):.0f} '
              f'cpus seen {len(set(r[2] for r in rows if r[1] == mode))}')


if __name__ == '__main__':
    main()
