#!/usr/bin/env python3
"""What the missing Megatron terms are worth on vTrain's rows, learned on the
2- and 4-GPU rows and reported on the 8-GPU rows.

Reads the per-row points of data/tools/vtrain_protocol.sh (VTRAIN_POINTS=FILE:
each row's prediction and its parts) and adds, one after the other, offline
(no perfcast code changes):

  recompute   activation checkpointing's re-run forward of every layer: a
              third of the layers' share of the step's compute and bubble
              (the layers' share of forward FLOPs, analytic); nothing learned
  calibrated  a scale of the single GPU's step per hidden size and
              micro-batch size, the median measured / predicted of the
              data-parallel rows (tp1 pp1) of 2 and 4 GPUs: what a user's own
              runs of the same models on fewer GPUs would teach
  tp_coll     a cost per tensor-parallel all-reduce on the critical path,
              a + b * (T - 1) ms, six all-reduces per layer and micro-batch
              slot (two forward, two in the recompute, two backward) over the
              M + P - 1 slots of 1F1B; a and b by least squares on the
              relative error of the 2- and 4-GPU rows (also printed learned
              on top of the recompute alone, without the single-GPU scale)

and prints MAPE and signed bias (median, mean) for the 2- and 4-GPU rows and
the held-out 8-GPU rows, then per layout of the 8-GPU rows for the last step.
Intervals are not recomputed. Standard library only.

Usage: vtrain_terms.py POINTS.csv
"""

import csv
import statistics
import sys


def num(p, key):
    return float(p[key])


def forward_layer_share(p):
    """The layers' share of a micro-batch's forward FLOPs (the LM head and
    embedding are not recomputed)."""
    h, layers, s, vocab = (num(p, k) for k in ("hidden", "layers", "seq_len", "vocab"))
    per_layer = 24 * h * h * (1 + s / (6 * h))
    return layers * per_layer / (layers * per_layer + 2 * h * vocab)


def tp_collectives(p):
    t, pp, m, layers = (int(p[k]) for k in ("tensor_parallel", "pipeline_parallel",
                                            "micro_batches", "layers"))
    if t == 1:
        return 0.0
    return 6.0 * layers / pp * (m + pp - 1)


def errors(points, key):
    return [(p[key] - p["measured"]) / p["measured"] for p in points]


def line(name, points, key):
    e = errors(points, key)
    print("  %-24s rows %4d  MAPE %5.1f%%  bias %+6.1f%% (mean %+6.1f%%)" % (
        name, len(e), 100 * sum(abs(x) for x in e) / len(e), 100 * statistics.median(e),
        100 * sum(e) / len(e)))


def least_squares_tp(points, base):
    """a, b >= 0 minimising sum(((base + n (a + b (T-1))) / y - 1)^2)."""
    rows = [(p["n_tp"] / p["measured"], p["n_tp"] * (int(p["tensor_parallel"]) - 1) / p["measured"],
             1 - p[base] / p["measured"]) for p in points if p["n_tp"] > 0]
    sxx = sum(x * x for x, _, _ in rows)
    sxy = sum(x * y for x, y, _ in rows)
    syy = sum(y * y for _, y, _ in rows)
    sxr = sum(x * r for x, _, r in rows)
    syr = sum(y * r for _, y, r in rows)
    det = sxx * syy - sxy * sxy
    a = (sxr * syy - syr * sxy) / det
    b = (syr * sxx - sxr * sxy) / det
    if a < 0 or b < 0:  # keep both non-negative: refit the one that is
        a, b = (0.0, syr / syy) if a < 0 else (sxr / sxx, 0.0)
    return a, b


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], newline="") as f:
        points = list(csv.DictReader(f))
    for p in points:
        p["measured"] = num(p, "measured_ms")
        p["base"] = num(p, "predicted_ms")
        p["n_tp"] = tp_collectives(p)
        work = num(p, "compute_ms") + num(p, "bubble_ms")
        p["recompute_ms"] = work * forward_layer_share(p) / 3
        p["recompute"] = p["base"] + p["recompute_ms"]
    learn = [p for p in points if p["gpus"] != "8"]
    held = [p for p in points if p["gpus"] == "8"]

    scales = {}
    for p in learn:
        if (p["tensor_parallel"], p["pipeline_parallel"]) == ("1", "1"):
            scales.setdefault((p["hidden"], p["micro_batch"]), []).append(
                p["measured"] / p["recompute"])
    scale = {k: statistics.median(v) for k, v in scales.items()}
    for p in points:
        p["calibrated"] = scale[(p["hidden"], p["micro_batch"])] * p["recompute"]

    a, b = least_squares_tp(learn, "calibrated")
    for p in points:
        p["tp_coll"] = p["calibrated"] + p["n_tp"] * (a + b * (int(p["tensor_parallel"]) - 1))
    # The same term learned without the single-GPU scale: transfer alone.
    a0, b0 = least_squares_tp(learn, "recompute")
    for p in points:
        p["tp_only"] = p["recompute"] + p["n_tp"] * (a0 + b0 * (int(p["tensor_parallel"]) - 1))

    print("Learned on the %d rows of 2 and 4 GPUs, reported on the %d rows of 8 GPUs" % (
        len(learn), len(held)))
    print("tensor-parallel all-reduce cost: %.3f ms + %.3f ms x (T - 1) (without the "
          "single-GPU scale: %.3f ms + %.3f ms x (T - 1))" % (a, b, a0, b0))
    print("single-GPU scale by (hidden, micro-batch): " + ", ".join(
        "%s/%s %.2f" % (k[0], k[1], v) for k, v in sorted(scale.items(), key=lambda kv: (
            int(kv[0][0]), int(kv[0][1])))))
    for key, name in (("base", "as predicted"), ("recompute", "recompute"),
                      ("tp_only", "recompute, TP all-reduce cost"),
                      ("calibrated", "recompute, single-GPU scale"),
                      ("tp_coll", "recompute, single-GPU scale, TP all-reduce cost")):
        print(name + ":")
        line("2 and 4 GPUs (learned)", learn, key)
        line("8 GPUs (held out)", held, key)
    print("8 GPUs per layout, all terms:")
    layouts = sorted({(p["tensor_parallel"], p["pipeline_parallel"], p["data_parallel"])
                      for p in held})
    for t, pp, dp in layouts:
        line("tp%s pp%s dp%s" % (t, pp, dp), [p for p in held if (
            p["tensor_parallel"], p["pipeline_parallel"], p["data_parallel"]) == (t, pp, dp)],
            "tp_coll")


if __name__ == "__main__":
    main()
