#!/usr/bin/env python3
"""Learns the multi-GPU implementation terms (predictor/parallel_terms.h) from measured steps.

  fit_parallel_terms.py ROWS.jsonl PREDICTIONS.json OUT.json [--holdout]

ROWS.jsonl: the measured campaign (multi-gpu/h200x2-parallel.jsonl);
PREDICTIONS.json: `perfcast -o json predict --batch-file` of the same rows in
parallel_campaign.py's order (data/tools/h200x2_parallel_protocol.sh makes both).
Each answer gives the composed step (iteration_ms - implementation_ms: what the
single-GPU model and the communication model say) and what the terms read (one
GPU's kernel launches per step and the layers it holds; the collective calls
are the layers times parallel_terms.h's CollectiveCallsPerUnit). Per framework
and strategy (tp, pp, fsdp, ddp: parallel_terms.h's ImplementationStrategy)
the terms minimise the mean |log(predicted / measured)| of

  max(composed * (1 + gpu_scale),
      launches * host_ms_per_launch + units * host_ms_per_unit
      + collectives * host_ms_per_collective)

over a grid (no numpy needed); a strategy without rows gets no term. Beside
them, the memory per GPU's band: the 10th and 90th percentiles of the layout
memory model's relative error on the strategy's rows, as ratios to the
predicted peak (memory_low_ratio <= 1 <= memory_high_ratio).
OUT.json is what predictor/parallel_terms.json holds; its terms of other
frameworks (learned from other measurements) are kept.

--holdout: instead, leave each model out in turn (fit on the others' rows,
predict its rows) and print per strategy the held-out MAPE, signed bias and
the share inside the predicted band scaled like the step, and the share of
measured memory peaks inside the memory band learned on the other models.
"""
import itertools
import json
import math
import statistics
import sys

GPU_SCALES = [i / 100 for i in range(0, 101, 2)]
PER_LAUNCH = [0.0] + [1e-4 * 1.35 ** i for i in range(0, 26)]
PER_UNIT = [0.0] + [0.05 * 1.4 ** i for i in range(0, 18)]
TERMS = ("gpu_scale", "host_ms_per_launch", "host_ms_per_unit", "host_ms_per_collective")
# Which terms each strategy may use: the host-bound ones follow how each
# implementation spends host time (DDP's hooks, FSDP's per-layer all-gather
# and reduce-scatter calls, DTensor's dispatch per operation).
SHAPES = {
    "ddp": ("gpu_scale", "host_ms_per_launch"),
    "fsdp": ("gpu_scale", "host_ms_per_launch", "host_ms_per_collective"),
    "tp": ("gpu_scale", "host_ms_per_launch"),
    "pp": ("gpu_scale",),
}


def rows_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def strategy(row):
    if row["tp"] > 1:
        return "tp"
    if row["pp"] > 1:
        return "pp"
    if row["dp"] > 1:
        return "fsdp" if row["zero"] > 0 else "ddp"
    return ""


def collective_calls_per_unit(row):
    """parallel_terms.h's CollectiveCallsPerUnit: FSDP's all-gather before a
    unit's forward (and again before its backward under ZeRO-3, which freed
    the gathered weights after forward) and its gradients' reduce-scatter."""
    if strategy(row) != "fsdp":
        return 0
    return 3 if row["zero"] >= 3 else 2


def points(rows_path, predictions_path):
    rows = [r for r in rows_of(rows_path) if r.get("schedule") != "GPipe"]
    answers = rows_of(predictions_path)
    if len(rows) != len(answers):
        sys.exit("%d rows for %d answers" % (len(rows), len(answers)))
    out = []
    for r, a in zip(rows, answers):
        p = a.get("prediction")
        if r["oom"] or p is None or not p.get("parallel") or not strategy(r):
            continue
        par = p["parallel"]
        composed = p["iteration_ms"] - par.get("implementation_ms", 0)
        out.append({
            "model": r["model"], "strategy": strategy(r), "framework": r["framework"],
            "measured": r["step_ms"], "composed": composed,
            "low": p["iteration_ms_low"] / p["iteration_ms"],
            "high": p["iteration_ms_high"] / p["iteration_ms"],
            "launches": par.get("launches", 0), "units": float(par.get("units", 0)),
            "collectives": collective_calls_per_unit(r) * float(par.get("units", 0)),
            "memory_measured": r["peak_allocated_gib"],
            "memory_predicted": p["memory"]["peak_bytes"] / 2**30,
        })
    return out


def predict(term, pt):
    host = (pt["launches"] * term["host_ms_per_launch"] + pt["units"] * term["host_ms_per_unit"] +
            pt["collectives"] * term["host_ms_per_collective"])
    return max(pt["composed"] * (1 + term["gpu_scale"]), host)


def fit(pts, shape):
    grids = {
        "gpu_scale": GPU_SCALES if "gpu_scale" in shape else [0.0],
        "host_ms_per_launch": PER_LAUNCH if "host_ms_per_launch" in shape else [0.0],
        "host_ms_per_unit": PER_UNIT if "host_ms_per_unit" in shape else [0.0],
        "host_ms_per_collective": PER_UNIT if "host_ms_per_collective" in shape else [0.0],
    }
    best, best_loss = None, math.inf
    # Ties (terms no row binds) go to the smallest terms: the grid is visited
    # smallest first and only a better loss replaces.
    for values in itertools.product(*(grids[name] for name in TERMS)):
        term = dict(zip(TERMS, values))
        loss = sum(abs(math.log(predict(term, p) / p["measured"])) for p in pts)
        if loss < best_loss - 1e-9:
            best, best_loss = term, loss
    return best


def percentile(values, q):
    """Linear interpolation between the closest ranks."""
    v = sorted(values)
    x = q * (len(v) - 1)
    i = int(math.floor(x))
    return v[i] if i + 1 >= len(v) else v[i] + (x - i) * (v[i + 1] - v[i])


def memory_band(pts):
    """measured ~ predicted / (1 + error), as for single-GPU memory."""
    errors = [p["memory_predicted"] / p["memory_measured"] - 1 for p in pts]
    return {"memory_low_ratio": min(1.0, 1 / (1 + percentile(errors, 0.9))),
            "memory_high_ratio": max(1.0, 1 / (1 + percentile(errors, 0.1)))}


def fit_all(pts):
    terms = []
    for (framework, name) in sorted({(p["framework"], p["strategy"]) for p in pts}):
        group = [p for p in pts if p["framework"] == framework and p["strategy"] == name]
        if name not in SHAPES:
            continue
        term = fit(group, SHAPES[name])
        term.update(memory_band(group))
        terms.append(dict(framework=framework, strategy=name, rows=len(group),
                          **{k: float("%.6g" % v) for k, v in term.items()}))
    return terms


def holdout(pts):
    results = {}
    for model in sorted({p["model"] for p in pts}):
        terms = {(t["framework"], t["strategy"]): t for t in fit_all(
            [p for p in pts if p["model"] != model])}
        for p in pts:
            if p["model"] != model:
                continue
            term = terms.get((p["framework"], p["strategy"]), dict.fromkeys(TERMS, 0))
            step = predict(term, p)
            err = (step - p["measured"]) / p["measured"]
            inside = step * p["low"] <= p["measured"] <= step * p["high"]
            memory = p["memory_predicted"]
            memory_inside = (memory * term.get("memory_low_ratio", 1) <= p["memory_measured"] <=
                             memory * term.get("memory_high_ratio", 1))
            for key in (p["strategy"], "all"):
                results.setdefault(key, []).append((err, inside, memory_inside))
    print("| strategy | rows | held-out MAPE | bias (median / mean) | coverage | memory coverage |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(results, key=lambda k: (k == "all", k)):
        e = results[key]
        errs = [x[0] for x in e]
        print("| %s | %d | %.1f%% | %+.1f%% / %+.1f%% | %.0f%% | %.0f%% |" % (
            key, len(e), 100 * statistics.mean(abs(x) for x in errs),
            100 * statistics.median(errs), 100 * statistics.mean(errs),
            100 * sum(x[1] for x in e) / len(e), 100 * sum(x[2] for x in e) / len(e)))


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    pts = points(argv[1], argv[2])
    if "--holdout" in argv:
        holdout(pts)
        return
    terms = fit_all(pts)
    # Terms of frameworks these rows do not measure (learned elsewhere) stay.
    fitted = {t["framework"] for t in terms}
    try:
        with open(argv[3]) as f:
            kept = [t for t in json.load(f).get("terms", []) if t["framework"] not in fitted]
    except FileNotFoundError:
        kept = []
    doc = {
        "source": "data/tools/fit_parallel_terms.py %s (data/README.md: Plain PyTorch on "
                  "2 x H200)" % argv[1],
        "terms": terms + kept,
    }
    with open(argv[3], "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for t in doc["terms"]:
        print(t)


if __name__ == "__main__":
    main(sys.argv)
