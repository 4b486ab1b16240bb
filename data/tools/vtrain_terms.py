#!/usr/bin/env python3
"""Learns Megatron's implementation terms (predictor/parallel_terms.h) from
vTrain's measured steps of 2 and 4 GPUs and reports them on the held-out
8-GPU rows.

  vtrain_terms.py POINTS.csv [--write predictor/parallel_terms.json]

POINTS.csv: the per-row points of data/tools/vtrain_protocol.sh
(VTRAIN_POINTS=FILE: each row's prediction, its parts and its compute per
operation class). Each row's composed step is its prediction less what the
terms added (predicted_ms - implementation_ms) with the class scales the
build applied divided out (--scales-applied, default: none), so the points of
any build serve. The terms are those ParallelPlan::Predict applies
(parallel_terms.h): each operation class's compute c times its scale k_c,
and the work outside the layers (embeddings, final norm, LM head and its
loss: the answer's outside_layers_ms, per class) times k_outside as well (the
pipeline bubble, made of the same stages' compute, with them: the other
stages' layers as the slowest stage's mix, their work outside the layers,
outside_layers_bubble_ms, times k_outside), then

  max((composed + n * (tp_collective_ms + tp_collective_ms_per_peer * (T - 1)))
        * (1 + gpu_scale),
      (M + P - 1) * (launches / M * host_ms_per_launch + host_ms_per_micro_batch)
        + n * (host_ms_per_tp_collective + host_ms_per_tp_collective_per_peer * (T - 1)))

with n the tensor-parallel all-reduces on the critical path: M + P - 1 slots
of the slowest stage's all-reduces per micro-batch (six per layer with
checkpointing, four without, plus the embedding's or the LM head's one: the
stage holding either is the slowest in these GPT models). One set of terms for
Megatron's data, tensor and pipeline parallel rows (the same software runs
all three).

host_ms_per_micro_batch is the schedule's own host work per micro-batch on
a stage (Megatron's step function, loss and point-to-point calls), which does
not shrink with the layers a stage holds: without it the per-launch cost
absorbed it, and four stages of few layers each came out too fast.

k_outside is Megatron's head and loss against the layers: the class scales
are learned mostly where a GPU holds 12-24 layers, and at P = 4 the last
stage's few layers wait for the vocabulary-wide GEMMs and the fp32
cross-entropy (which the points' build already prices as Megatron runs it:
predictor/parallel.cc), so without a scale of their own that work took the
layers' scales.

Only the GEMM and attention classes get a scale of their own (FITTED_CLASSES):
free, norm's (a small share) and element-wise work's (per layer in nearly the
same proportion to the GEMMs at both widths) traded against GEMM and
attention, norm's landing on the grid's floor, with the same error as when
they stay at 1, so they stay at 1. The
scales carry a small penalty on their distance from 1 (SCALE_PENALTY x
ln(k)^2 per row), so that a flat valley of the loss picks the scale nearest
to the single-GPU model's rather than wherever the descent stopped.

How they are learned: the optimizer's scale from the per-step phase alone.
The data-parallel rows of one model and micro-batch size differ only in
their micro-batch count M, so measured = a * M + b separates the work per
micro-batch (a) from the work per step (b: the optimizer step and the
exposed gradient all-reduce); k_optimizer is the median of (b - exposed) /
predicted optimizer over those groups. The other class scales and the terms
then minimise the mean |log(predicted / measured)| of the learning rows by
coordinate descent over grids; every term >= 0, every scale > 0.

The step's 10-90% band is the single-GPU band scaled about the step by
interval_scale (parallel_terms.h): the larger, over the learning rows' GPU
counts, of the 80th percentile of the scale that reaches each learning row of
that count when the terms are learned on the learning rows of the other count
only (2 GPUs priced by terms learned on 4, and 4 by terms learned on 2), so
that the band is as wide as errors on rows the terms never saw, including
those of a tensor-parallel degree they never saw; both splits are reported
with it.

Printed: MAPE, signed bias (median, mean) and the share inside the predicted
band for the learning rows, the held-out rows and all
rows, per tensor-parallel degree, as predicted and with the learned terms,
for two splits: learned on 2 and 4 GPUs and reported on 8; and learned on the
2- and 4-GPU rows of 12-20 layers and reported on the 24-layer 8-GPU rows (a
GPU count and model sizes the fit never saw).

--write replaces the megatron entries of that terms file (learned on the
first split) and keeps the others. Standard library only.
"""

import csv
import json
import math
import os
import statistics
import sys

# The operation classes whose compute Megatron's kernels re-price
# (parallel_terms.h: class_scale); the optimizer's comes from the per-step phase.
CLASSES = ("gemm", "attention", "elementwise", "norm")
# The classes whose scale is learned; the others stay at 1 (see above).
FITTED_CLASSES = ("gemm", "attention")
# The classes of the work outside the layers (embeddings, final norm, LM head
# and loss), which k_outside scales on top of their class scales.
OUTSIDE_CLASSES = ("gemm", "attention", "elementwise", "norm", "softmax", "embedding")
# The learned scales, each drawn toward 1 by SCALE_PENALTY.
SCALES = tuple("k_" + c for c in FITTED_CLASSES) + ("k_outside",)
SCALE_GRID = [0.3 + 0.02 * i for i in range(186)]
# No GEMM runs faster than the A100's fp16 tensor-core peak: its FLOPs at that
# peak take about this fraction of the time the single-GPU model prices
# vTrain's largest GEMMs at (docs/multi-gpu-validation.md: "The head and its
# loss"), so a smaller GEMM scale is no kernel's speed but the fit trading the
# layers' GEMMs against other classes.
GEMM_SCALE_FLOOR = 0.7
SCALE_PENALTY = 0.001
GRIDS = {
    "tp_collective_ms": [0.0025 * i for i in range(121)],
    "tp_collective_ms_per_peer": [0.0025 * i for i in range(81)],
    "gpu_scale": [0.01 * i for i in range(41)],
    "host_ms_per_launch": [0.001 * i for i in range(151)],
    "host_ms_per_micro_batch": [0.1 * i for i in range(101)],
    "host_ms_per_tp_collective": [0.005 * i for i in range(81)],
    "host_ms_per_tp_collective_per_peer": [0.0025 * i for i in range(81)],
}
GRIDS.update({k: SCALE_GRID for k in SCALES})
GRIDS["k_gemm"] = [k for k in SCALE_GRID if k >= GEMM_SCALE_FLOOR]
STARTS = [dict({"tp_collective_ms": a, "tp_collective_ms_per_peer": 0.0, "gpu_scale": 0.0,
                "host_ms_per_launch": h, "host_ms_per_micro_batch": mb,
                "host_ms_per_tp_collective": c, "host_ms_per_tp_collective_per_peer": 0.0},
               **{k: 1.0 for k in SCALES})
          for a, h, mb, c in ((0.0, 0.0, 0.0, 0.0), (0.1, 0.05, 0.0, 0.0),
                              (0.0, 0.045, 3.0, 0.05), (0.1, 0.045, 3.0, 0.0))]
TERMS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "predictor",
                          "parallel_terms.json")


def applied_scales(path):
    """The megatron class scales, interval scale and outside-layers scale of
    the terms file the points' build compiled in."""
    with open(path) as f:
        for term in json.load(f)["terms"]:
            if term["framework"] == "megatron":
                return (term.get("class_scale", {}), term.get("class_scale_precisions", []),
                        term.get("interval_scale", 0) or 1.0,
                        term.get("outside_layers_scale", 1.0))
    return {}, [], 1.0, 1.0


def load(path, applied):
    scales, precisions, band, outside_applied = applied
    with open(path, newline="") as f:
        points = list(csv.DictReader(f))
    for p in points:
        for key in ("measured_ms", "predicted_ms", "lo_ms", "hi_ms", "implementation_ms",
                    "launches", "compute_ms", "bubble_ms", "optimizer_ms", "dp_exposed_ms",
                    "outside_layers_bubble_ms") + tuple(c + "_ms" for c in CLASSES) + tuple(
                        "outside_%s_ms" % c for c in OUTSIDE_CLASSES):
            if key not in p:
                sys.exit("%s: no column %s (points of an older vtrain_protocol.sh)" % (path, key))
            p[key] = float(p[key])
        t, pp, m, layers = (int(p[k]) for k in ("tensor_parallel", "pipeline_parallel",
                                                "micro_batches", "layers"))
        p["T"], p["P"], p["M"] = t, pp, m
        # The composed step and its class parts as the single-GPU model priced
        # them, before any class scale the build applied.
        # The layers' part of each class and the work outside them (which
        # the outside-layers scale multiplies too) apart.
        scaled = p["precision"] in precisions
        k = {c: scales.get(c, 1.0) if scaled else 1.0
             for c in OUTSIDE_CLASSES + ("optimizer",)}
        k_outside = outside_applied if scaled else 1.0
        outside_ms = {c: p["outside_%s_ms" % c] for c in OUTSIDE_CLASSES}
        p["class"] = {c: (p[c + "_ms"] - outside_ms[c]) / k[c] for c in CLASSES}
        p["outside"] = {c: outside_ms[c] / (k[c] * k_outside) for c in OUTSIDE_CLASSES}
        p["optimizer"] = p["optimizer_ms"] / k["optimizer"]
        layers_ms = p["compute_ms"] - sum(outside_ms.values())
        p["layer_compute"] = layers_ms - sum(
            p[c + "_ms"] - outside_ms[c] - p["class"][c] for c in CLASSES)
        # The bubble: the other stages' layers, taken to run the slowest's
        # mix of classes, and their work outside the layers.
        p["bubble_outside"] = p["outside_layers_bubble_ms"] / k_outside
        p["bubble_layers"] = (p["bubble_ms"] - p["outside_layers_bubble_ms"]) * (
            p["layer_compute"] / layers_ms if layers_ms > 0 else 1.0)
        p["other"] = (p["predicted_ms"] - p["implementation_ms"] - p["compute_ms"] -
                      p["bubble_ms"] - p["optimizer_ms"])
        p["slots"] = m + pp - 1
        per_layer = 6 if p["activation_checkpointing"] == "1" else 4
        p["collectives"] = 0 if t == 1 else p["slots"] * (
            per_layer * layers // pp + (2 if pp == 1 else 1))
        # The band's distances below and above the step, relative to it: the
        # single-GPU band on the step's uncertain parts, which interval_scale
        # scales about the step (parallel_terms.h).
        p["below"] = (p["predicted_ms"] - p["lo_ms"]) / p["predicted_ms"] / band
        p["above"] = (p["hi_ms"] - p["predicted_ms"]) / p["predicted_ms"] / band
    return points


def composed(term, p):
    layers = p["layer_compute"] + sum((term.get("k_" + c, 1.0) - 1) * p["class"][c] for c in CLASSES)
    k_outside = term.get("k_outside", 1.0)
    outside = k_outside * sum(term.get("k_" + c, 1.0) * p["outside"][c] for c in OUTSIDE_CLASSES)
    bubble = (p["bubble_layers"] * layers / p["layer_compute"] if p["layer_compute"] > 0
              else 0.0) + (
        k_outside * p["bubble_outside"])
    return layers + outside + bubble + p["other"] + term.get("k_optimizer", 1.0) * p["optimizer"]


def predict(term, p):
    per = term["tp_collective_ms"] + term["tp_collective_ms_per_peer"] * (p["T"] - 1)
    gpu = (composed(term, p) + p["collectives"] * per) * (1 + term["gpu_scale"])
    host = p["slots"] * (p["launches"] / p["M"] * term["host_ms_per_launch"] +
                         term["host_ms_per_micro_batch"]) + p["collectives"] * (
        term["host_ms_per_tp_collective"] + term["host_ms_per_tp_collective_per_peer"] * (p["T"] - 1))
    return max(gpu, host)


def loss(term, points):
    penalty = SCALE_PENALTY * len(points) * sum(math.log(term.get(k, 1.0)) ** 2 for k in SCALES)
    return penalty + sum(abs(math.log(predict(term, p) / p["measured_ms"])) for p in points)


def lsq(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def optimizer_scale(points):
    """k_optimizer from the per-step phase of the data-parallel rows: per
    model and micro-batch size, measured = a * M + b; b less the exposed
    gradient all-reduce over the predicted optimizer step, median."""
    groups = {}
    for p in points:
        if p["T"] == 1 and p["P"] == 1:
            groups.setdefault((p["hidden"], p["layers"], p["micro_batch"]), []).append(p)
    ratios = []
    for rows in groups.values():
        if len({p["M"] for p in rows}) < 2:
            continue
        _, per_step = lsq([p["M"] for p in rows], [p["measured_ms"] for p in rows])
        exposed = statistics.mean(p["dp_exposed_ms"] for p in rows)
        ratios.append((per_step - exposed) / statistics.mean(p["optimizer"] for p in rows))
    return statistics.median(ratios), len(ratios)


def fit(points, starts=None):
    """k_optimizer from optimizer_scale(), then the other terms minimising
    loss() over GRIDS by coordinate descent from each of `starts` (default
    STARTS)."""
    k_optimizer, _ = optimizer_scale(points)
    best, best_loss = None, math.inf
    for start in starts or STARTS:
        term = dict(start, k_optimizer=k_optimizer)
        current = loss(term, points)
        for _ in range(20):
            moved = False
            for name, grid in GRIDS.items():
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


def reach(p, step):
    """The interval_scale at which the band about `step` reaches the measured step."""
    if p["measured_ms"] < step:
        return (step - p["measured_ms"]) / (step * p["below"])
    return (p["measured_ms"] - step) / (step * p["above"])


def stats(points, step, band=1.0):
    e = [(step(p) - p["measured_ms"]) / p["measured_ms"] for p in points]
    inside = sum(1 for p in points if reach(p, step(p)) <= band)
    return "rows %4d  MAPE %5.1f%%  bias %+6.1f%% / %+6.1f%%  coverage %5.1f%%" % (
        len(e), 100 * statistics.mean(abs(x) for x in e), 100 * statistics.median(e),
        100 * statistics.mean(e), 100 * inside / len(e))


def layout_name(p):
    return "tp%d pp%d dp%s" % (p["T"], p["P"], p["data_parallel"])


def report(name, learn, held, step, band=1.0):
    print(name + ":")
    print("  %-28s %s" % ("learned on", stats(learn, step, band)))
    print("  %-28s %s" % ("held out", stats(held, step, band)))
    for t in sorted({p["T"] for p in learn + held}):
        for label, rows in (("learned", learn), ("held out", held)):
            sel = [p for p in rows if p["T"] == t]
            if sel:
                print("  %-28s %s" % ("tp%d, %s" % (t, label), stats(sel, step, band)))
    for h in sorted({p["hidden"] for p in held}, key=int):
        print("  %-28s %s" % ("hidden %s, held out" % h,
                              stats([p for p in held if p["hidden"] == h], step, band)))
    for name in sorted({layout_name(p) for p in held}):
        print("  %-28s %s" % (name + ", held out",
                              stats([p for p in held if layout_name(p) == name], step, band)))


def describe(term):
    return ", ".join("%s %.4g" % kv for kv in term.items())


def write(path, term, points, band):
    with open(path) as f:
        doc = json.load(f)
    kept = [t for t in doc["terms"] if t["framework"] != "megatron"]
    strategies = {"tp": lambda p: p["T"] > 1, "pp": lambda p: p["T"] == 1 and p["P"] > 1,
                  "ddp": lambda p: p["T"] == 1 and p["P"] == 1}
    scales = {c: float("%.4g" % term["k_" + c]) for c in FITTED_CLASSES + ("optimizer",)}
    plain = {k: float("%.6g" % v) for k, v in term.items() if not k.startswith("k_")}
    plain["outside_layers_scale"] = float("%.4g" % term["k_outside"])
    for name, test in sorted(strategies.items()):
        kept.append(dict(framework="megatron", strategy=name,
                         source="data/tools/vtrain_terms.py: vTrain's rows of 2 and 4 GPUs "
                                "(docs/multi-gpu-validation.md: vTrain)",
                         rows=sum(1 for p in points if test(p)), class_scale=scales,
                         class_scale_precisions=sorted({p["precision"] for p in points}),
                         interval_scale=float("%.4g" % band), **plain))
    doc["terms"] = kept
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--write"):
        sys.exit(__doc__)
    points = load(argv[1], applied_scales(TERMS_FILE))
    splits = [
        ("learned on 2 and 4 GPUs, reported on 8",
         lambda p: p["gpus"] != "8", lambda p: p["gpus"] == "8"),
        ("learned on 2 and 4 GPUs of 12-20 layers, reported on 8 GPUs of 24 layers",
         lambda p: p["gpus"] != "8" and p["layers"] != "24",
         lambda p: p["gpus"] == "8" and p["layers"] == "24"),
    ]
    written = None
    for name, learns, helds in splits:
        learn = [p for p in points if learns(p)]
        held = [p for p in points if helds(p)]
        k_optimizer, groups = optimizer_scale(learn)
        # Later fits start from the first split's terms: the same descent,
        # fewer starts.
        term = fit(learn, [written[0]] if written else None)
        print("== %s (%d rows, %d held out)" % (name, len(learn), len(held)))
        print("k_optimizer %.3f from the per-step phase of %d data-parallel groups" % (
            k_optimizer, groups))
        print("megatron terms: " + describe(term))
        if written is None:
            # The band from residuals of rows the terms were not learned on:
            # the learning rows' GPU counts crossed (terms learned on one
            # count, priced on the other).
            # Each count's band must hold 80% of its rows: pricing 4 GPUs
            # (a tensor-parallel degree the 2-GPU rows lack) from 2 is what
            # the held-out 8 GPUs are to 2 and 4, and needs the wider band.
            counts = sorted({p["gpus"] for p in learn})
            bands = []
            for count in counts:
                inner = fit([p for p in learn if p["gpus"] != count], [term])
                crossed = sorted(reach(p, predict(inner, p)) for p in learn if p["gpus"] == count)
                bands.append(crossed[min(len(crossed) - 1,
                                         int(math.ceil(0.8 * len(crossed))) - 1)])
            band = max(bands)
            print("interval_scale %.3f: the band holds 80%% of the learning rows of each GPU "
                  "count (%s) priced with terms learned on the other (%s)" % (
                      band, " / ".join(counts), " / ".join("%.3f" % b for b in bands)))
            written = (term, learn, band)
        report("as predicted", learn, held, lambda p: p["predicted_ms"])
        report("with the learned terms and band", learn, held, lambda p: predict(term, p), band)
        print("  %-28s %s" % ("all rows", stats(points, lambda p: predict(term, p), band)))
    if len(argv) == 4:
        write(argv[3], *written)
        print("wrote the megatron entries of " + argv[3])


if __name__ == "__main__":
    main(sys.argv)
