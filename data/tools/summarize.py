#!/usr/bin/env python3
"""Prints the README's numbers for each agent store: data/tools/summarize.py data/*.sqlite"""
import sqlite3, statistics, sys

def pct(values, q):
    values = sorted(values)
    if not values: return float('nan')
    i = q * (len(values) - 1); lo = int(i); hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (i - lo)

for path in sys.argv[1:]:
    c = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
    print(f'== {path}')
    for n in c.execute('select name, gpu_model, gpu_vendor_name, driver_version, cuda_version, torch_version, cpu_model, cpu_cores, labels, '
                       'measured_bandwidth_gbs, measured_fp32_tflops, measured_tf32_tflops, measured_fp16_tflops, measured_bf16_tflops, '
                       'measured_fp64_tflops, launch_latency_us, h2d_pinned_gbs, h2d_pageable_gbs, cpu_single_thread_score from nodes'):
        print('node', n[:9])
        print('  measured: bandwidth %s GB/s | TFLOP/s fp32 %s tf32 %s fp16 %s bf16 %s fp64 %s | launch %s us | h2d pinned %s pageable %s GB/s | cpu score %s'
              % tuple('-' if v is None else f'{v:.4g}' for v in n[9:]))
    q = 'select w.kind, count(*) from profiles p join workloads w on w.id=p.workload_id group by 1'
    print('  profiles:', dict(c.execute(q).fetchall()),
          'skipped:', c.execute('select count(*) from skipped_runs').fetchone()[0])
    t0, t1 = c.execute('select min(measured_at_us), max(measured_at_us) from profiles').fetchone()
    print(f'  first..last profile: {(t1 - t0) / 1e6:.1f} s')
    rows = c.execute('select w.kind, w.family, w.precision, count(*) from profiles p join workloads w on w.id=p.workload_id group by 1,2,3').fetchall()
    fams = {}
    for kind, fam, prec, cnt in rows: fams.setdefault((kind, fam), []).append(f'{prec}:{cnt}')
    for (kind, fam), v in sorted(fams.items()): print(f'    {kind:5} {fam:12} ' + ' '.join(v))
    cv = [r[0] for r in c.execute("select p.repeat_cv from profiles p join workloads w on w.id=p.workload_id where w.kind='model' and p.mean_ms > 1 and p.repeat_cv is not null")]
    if cv:
        print(f'  repeat_cv (models, mean > 1 ms, n={len(cv)}): median {100*statistics.median(cv):.2f}% p90 {100*pct(cv, .9):.2f}% '
              f'share <= 2%: {100*sum(x <= 0.02 for x in cv)/len(cv):.1f}%')
    cvo = [r[0] for r in c.execute("select p.repeat_cv from profiles p join workloads w on w.id=p.workload_id where w.kind='op' and p.mean_ms > 1 and p.repeat_cv is not null")]
    if cvo:
        print(f'  repeat_cv (ops, mean > 1 ms, n={len(cvo)}): median {100*statistics.median(cvo):.2f}% p90 {100*pct(cvo, .9):.2f}%')
    best = c.execute("select w.precision, max(p.achieved_tflops) from profiles p join workloads w on w.id=p.workload_id where w.family='gemm' group by 1").fetchall()
    print('  best gemm achieved TFLOP/s:', {k: round(v, 1) for k, v in best if v is not None})
