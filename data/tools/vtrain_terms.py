#!/usr/bin/env python3
"""Learns Megatron's implementation terms (predictor/parallel_terms.h) from
vTrain's measured steps of 2 and 4 GPUs and reports them on the held-out
8-GPU rows.

  vtrain_terms.py POINTS.csv [--write predictor/parallel_terms.json]

POINTS.csv: the per-row points of data/tools/vtrain_protocol.sh
(VTRAIN_POINTS=FILE: each row's prediction and its parts). Each row's
composed step is its prediction less what the terms added
(predicted_ms - implementation_ms), so the points of any build serve. The
terms are those ParallelPlan::Predict applies (parallel_terms.h):

  max((composed + n * (tp_collective_ms + tp_collective_ms_per_peer * (T - 1)))
        * (1 + gpu_scale),
      launches / M * (M + P - 1) * host_ms_per_launch)

with n the tensor-parallel all-reduces on the critical path: M + P - 1 slots
of the slowest stage's all-reduces per micro-batch (six per layer with
checkpointing, four without, plus the embedding's or the LM head's one: the
stage holding either is the slowest in these GPT models). One set of terms for
Megatron's data, tensor and pipeline parallel rows (the same software runs
all three), minimising the mean |log(predicted / measured)| of the 2- and
4-GPU rows by coordinate descent over grids; every term >= 0, as the file
requires.

Printed: MAPE, signed bias (median, mean) and the share inside the predicted
band (scaled like the step) for the learning rows, the held-out 8-GPU rows
and all rows, per tensor-parallel degree, as predicted, with the terms, and
with a "calibrated" single GPU: a scale per hidden size and micro-batch
size, the median measured / predicted of the data-parallel rows (tp1 pp1) of
2 and 4 GPUs with the terms, and the tensor-parallel terms learned again on
top of it. That scale calibrates the A100 on vTrain's own measurements (what
a user's runs of the same models would teach); it is reported, never
written.

--write replaces the megatron entries of that terms file and keeps the
others. Standard library only.
"""

import csv
import json
import math
import statistics
import sys

GRIDS = {
    "tp_collective_ms": [0.0025 * i for i in range(121)],
    "tp_collective_ms_per_peer": [0.0025 * i for i in range(81)],
    "gpu_scale": [0.01 * i for i in range(41)],
    "host_ms_per_launch": [0.001 * i for i in range(151)],
}
STARTS = [{"tp_collective_ms": a, "tp_collective_ms_per_peer": b, "gpu_scale": 0.0,
           "host_ms_per_launch": h}
          for a in (0.0, 0.1, 0.2) for b in (0.0, 0.05) for h in (0.0, 0.05)]


def load(path):
    with open(path, newline="") as f:
        points = list(csv.DictReader(f))
    for p in points:
        for key in ("measured_ms", "predicted_ms", "lo_ms", "hi_ms", "implementation_ms",
                    "launches"):
            if key not in p:
                sys.exit("%s: no column %s (points of an older vtrain_protocol.sh)" % (path, key))
            p[key] = float(p[key])
        t, pp, m, layers = (int(p[k]) for k in ("tensor_parallel", "pipeline_parallel",
                                                "micro_batches", "layers"))
        p["T"], p["P"], p["M"] = t, pp, m
        p["composed"] = p["predicted_ms"] - p["implementation_ms"]
        p["slots"] = m + pp - 1
        per_layer = 6 if p["activation_checkpointing"] == "1" else 4
        p["collectives"] = 0 if t == 1 else p["slots"] * (
            per_layer * layers // pp + (2 if pp == 1 else 1))
        p["low"] = p["lo_ms"] / p["predicted_ms"]
        p["high"] = p["hi_ms"] / p["predicted_ms"]
    return points


def predict(term, p):
    per = term["tp_collective_ms"] + term["tp_collective_ms_per_peer"] * (p["T"] - 1)
    gpu = (p["composed"] + p["collectives"] * per) * (1 + term["gpu_scale"])
    return max(gpu, p["launches"] / p["M"] * p["slots"] * term["host_ms_per_launch"])


def loss(term, points):
    return sum(abs(math.log(predict(term, p) / p["measured_ms"])) for p in points)


def fit(points, grids=None, starts=None):
    """The terms minimising loss() over `grids` (default GRIDS), by coordinate
    descent from each of `starts` (default STARTS)."""
    grids = grids or GRIDS
    best, best_loss = None, math.inf
    for start in starts or STARTS:
        term, current = dict(start), loss(start, points)
        for _ in range(20):
            moved = False
            for name, grid in grids.items():
                for value in grid:
                    trial = dict(term, **{name: value})
                    trial_loss = loss(trial, points)
                    if trial_loss < current - 1e-9:
                        term, current, moved = trial, trial_loss, True
            if not moved:
                break
        if current < best_loss - 1e-9:
            best, best_loss = term, current
    return best


def stats(points, step):
    e = [(step(p) - p["measured_ms"]) / p["measured_ms"] for p in points]
    inside = sum(1 for p in points
                 if step(p) * p["low"] <= p["measured_ms"] <= step(p) * p["high"])
    return "rows %4d  MAPE %5.1f%%  bias %+6.1f%% / %+6.1f%%  coverage %5.1f%%" % (
        len(e), 100 * statistics.mean(abs(x) for x in e), 100 * statistics.median(e),
        100 * statistics.mean(e), 100 * inside / len(e))


def report(name, points, step):
    learn = [p for p in points if p["gpus"] != "8"]
    held = [p for p in points if p["gpus"] == "8"]
    print(name + ":")
    print("  %-28s %s" % ("2 and 4 GPUs (learned)", stats(learn, step)))
    print("  %-28s %s" % ("8 GPUs (held out)", stats(held, step)))
    print("  %-28s %s" % ("all", stats(points, step)))
    for t in sorted({p["T"] for p in points}):
        for label, rows in (("learned", learn), ("held out", held)):
            sel = [p for p in rows if p["T"] == t]
            if sel:
                print("  %-28s %s" % ("tp%d, %s" % (t, label), stats(sel, step)))


def write(path, term, points):
    with open(path) as f:
        doc = json.load(f)
    kept = [t for t in doc["terms"] if t["framework"] != "megatron"]
    learn = [p for p in points if p["gpus"] != "8"]
    strategies = {"tp": lambda p: p["T"] > 1, "pp": lambda p: p["T"] == 1 and p["P"] > 1,
                  "ddp": lambda p: p["T"] == 1 and p["P"] == 1}
    for name, test in sorted(strategies.items()):
        kept.append(dict(framework="megatron", strategy=name,
                         source="data/tools/vtrain_terms.py: vTrain's rows of 2 and 4 GPUs "
                                "(docs/multi-gpu-validation.md: vTrain)",
                         rows=sum(1 for p in learn if test(p)),
                         **{k: float("%.6g" % v) for k, v in term.items()}))
    doc["terms"] = kept
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--write"):
        sys.exit(__doc__)
    points = load(argv[1])
    learn = [p for p in points if p["gpus"] != "8"]
    term = fit(learn)
    print("Learned on the %d rows of 2 and 4 GPUs, reported on the %d rows of 8 GPUs" % (
        len(learn), len(points) - len(learn)))
    print("megatron terms: " + ", ".join("%s %.4g" % kv for kv in term.items()))
    scales = {}
    for p in learn:
        if p["T"] == 1 and p["P"] == 1:
            scales.setdefault((p["hidden"], p["micro_batch"]), []).append(
                p["measured_ms"] / predict(term, p))
    scale = {k: statistics.median(v) for k, v in scales.items()}
    print("calibrated single-GPU scale by (hidden, micro-batch): " + ", ".join(
        "%s/%s %.2f" % (k[0], k[1], v) for k, v in sorted(
            scale.items(), key=lambda kv: (int(kv[0][0]), int(kv[0][1])))))
    report("as predicted", points, lambda p: p["predicted_ms"])
    report("with the learned terms", points, lambda p: predict(term, p))
    # Calibrated: each row's composed step and host bound scaled, and the
    # tensor-parallel terms learned again on top of that.
    calibrated = [dict(p) for p in points]
    for p in calibrated:
        s = scale[(p["hidden"], p["micro_batch"])]
        p["composed"] *= s
        p["launches"] *= s
    fixed = {k: [term[k]] for k in ("gpu_scale", "host_ms_per_launch")}
    tp_term = fit([p for p in calibrated if p["gpus"] != "8"], dict(GRIDS, **fixed),
                  [dict(term, tp_collective_ms=a) for a in (0.0, 0.1, 0.2)])
    print("calibrated: tensor-parallel terms learned again: " + ", ".join(
        "%s %.4g" % (k, tp_term[k]) for k in ("tp_collective_ms", "tp_collective_ms_per_peer")))
    report("with the calibrated single GPU (vTrain's dp rows) and its terms", calibrated,
           lambda p: predict(tp_term, p))
    if len(argv) == 4:
        write(argv[3], term, points)
        print("wrote the megatron entries of " + argv[3])


if __name__ == "__main__":
    main(sys.argv)
