#!/usr/bin/env python3
"""Learns the multi-GPU implementation terms (predictor/parallel_terms.h) from measured steps.

  fit_parallel_terms.py ROWS.jsonl PREDICTIONS.json [ROWS.jsonl PREDICTIONS.json ...]
      OUT.json [--holdout | --cross]

ROWS.jsonl: a measured campaign (multi-gpu/h200x2-parallel.jsonl, the held-out
sizes of another host multi-gpu/h200x2-m19-sizes.jsonl);
PREDICTIONS.json: `perfcast -o json predict --batch-file` of the same rows in
parallel_campaign.py's order (data/tools/h200x2_parallel_protocol.sh makes both).
The terms are learned on every campaign's rows together.
Each answer gives the composed step (iteration_ms - implementation_ms: what the
single-GPU model and the communication model say) and what the terms read (one
GPU's kernel launches per step and the layers it holds; the collective calls
are the layers times parallel_terms.h's CollectiveCallsPerUnit; the node's
Python loop's host per launch at its per-op cost and the model's dispatch
weight). Per framework and strategy (tp, pp, fsdp,
ddp: parallel_terms.h's ImplementationStrategy) the terms minimise the mean
|log(predicted / measured)| of

  max(composed * (1 + gpu_scale) + dp_comm * dp_comm_contention,
      launches * (host_ms_per_launch
                  + loop_ms * (host_loop_scale * dispatch + host_hook_scale))
      + units * host_ms_per_unit
      + collectives * host_ms_per_collective)

over a grid (no numpy needed), with dp_comm the answer's whole gradient
all-reduce (dp_comm_ms); a strategy without rows gets no term. DDP's GPU term
is a share of that all-reduce's time (its kernels overlap backward's on the
same GPU), not a scale on the compute: the measured GPU-bound DDP steps exceed
the composed ones by about the all-reduce's time, a decoder's by much and a
CNN's, with few gradients per FLOP, by nothing. DDP keeps
the single-GPU loop's own host (host_loop_scale 1: each replica runs the
model's Python loop) and learns what its hooks add per launch in the loop's
units (host_hook_scale): its host follows the node's speed, and only the
loop's part the model's dispatch weight. FSDP's host terms stay in ms: in
those units (docs/multi-gpu-validation.md, "DDP's host in the node's Python
units") its steps left out by campaign missed more, not less.

Both bands are learned from held-out residuals, leaving one model out at a
time: a model's rows share its errors (a model over-predicted under DDP is
over-predicted under FSDP too), so the spread of in-sample residuals is
narrower than what a new model meets.
- The step's band (interval_scale): the answers' band, from the single-GPU
  model's, is scaled about the step so that it holds 80% of the steps priced
  with terms fitted without their model: the 80th percentile over those rows
  of the scale that just reaches each measured step, per strategy where it
  has at least MIN_OWN_ROWS rows, else over all the framework's rows.
- Memory per GPU's band (memory_low_ratio <= 1 <= memory_high_ratio, ratios
  to the predicted peak), per strategy: exp(-w) .. exp(w), w the percentile
  of |log(measured / predicted)| over all the framework's layouts at the
  lowest of MEMORY_LEVELS whose w, learned on the other models' rows, holds
  at least 80% of the strategy's peaks of each left-out model. Per strategy,
  because one band for the framework held 95% of DDP's peaks and 60% of
  TP's; symmetric, because a model over-predicted where others are
  under-predicted is as likely as the reverse: quantiles of the other
  models' signed ratios could not reach a left-out model missed the other
  way (the 1B decoder under TP and PP, where the rest were over).
The answers' bands are taken back to the unscaled ones with the
interval_scale of the predictor/parallel_terms.json they were priced with
(PRICED), as their steps are taken back to the composed ones.
OUT.json is what predictor/parallel_terms.json holds; its terms of other
frameworks (learned from other measurements) are kept.

--holdout: instead, leave each model out in turn (fit everything above on the
others' rows, predict its rows) and print per strategy, for checkpointed rows
and for all, the held-out MAPE, signed bias, the share inside the step's band
and the share of measured memory peaks inside the memory band.
--cross: the same table, leaving each campaign out in turn (its host and its
configurations: learned on the other campaigns' rows).
"""
import itertools
import json
import math
import os
import statistics
import sys

GPU_SCALES = [i / 100 for i in range(0, 101, 2)]
CONTENTION = [i / 20 for i in range(0, 41)]  # of the all-reduce's time
PER_LAUNCH = [0.0] + [1e-4 * 1.35 ** i for i in range(0, 26)]
PER_UNIT = [0.0] + [0.05 * 1.4 ** i for i in range(0, 18)]
# Multiples of the Python loop's host per launch.
HOOK_SCALES = [0.0] + [0.5 * 1.12 ** i for i in range(0, 40)]
TERMS = ("gpu_scale", "dp_comm_contention", "host_ms_per_launch", "host_ms_per_unit",
         "host_ms_per_collective", "host_loop_scale", "host_hook_scale")
COVERAGE = 0.8  # a 10-90% band
MIN_OWN_ROWS = 8  # below, a strategy's step band is the framework's
MEMORY_LEVELS = [i / 100 for i in range(50, 101)]  # narrowest band first
PRICED = os.path.join(os.path.dirname(__file__), "..", "..", "predictor", "parallel_terms.json")
# Which terms each strategy may use: the host-bound ones follow how each
# implementation spends host time (DDP's hooks, FSDP's per-layer all-gather
# and reduce-scatter calls, DTensor's dispatch per operation and per layer:
# eager TP's step hardly moves with the tokens of a batch). DDP's hooks and
# DTensor's dispatch are Python work, so they are learned in the node's Python
# units (multiples of the plain loop's host per launch) and follow its speed.
# Each strategy's grid per term; a term left out is 0.
SHAPES = {
    "ddp": {"dp_comm_contention": CONTENTION, "host_loop_scale": [1.0],
            "host_hook_scale": HOOK_SCALES},
    "fsdp": {"gpu_scale": GPU_SCALES, "host_ms_per_launch": PER_LAUNCH,
             "host_ms_per_collective": PER_UNIT},
    "tp": {"gpu_scale": GPU_SCALES, "host_hook_scale": HOOK_SCALES,
           "host_ms_per_unit": PER_UNIT},
    "pp": {"gpu_scale": GPU_SCALES},
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


def priced_scales():
    """interval_scale per (framework, strategy) of the terms the answers were priced with."""
    with open(PRICED) as f:
        return {(t["framework"], t["strategy"]): t.get("interval_scale") or 1.0
                for t in json.load(f)["terms"]}


def points(rows_path, predictions_path):
    rows = [r for r in rows_of(rows_path) if r.get("schedule") != "GPipe"]
    answers = rows_of(predictions_path)
    scales = priced_scales()
    if len(rows) != len(answers):
        sys.exit("%d rows for %d answers" % (len(rows), len(answers)))
    out = []
    for r, a in zip(rows, answers):
        p = a.get("prediction")
        if r["oom"] or p is None or not p.get("parallel") or not strategy(r):
            continue
        par = p["parallel"]
        composed = p["iteration_ms"] - par.get("implementation_ms", 0)
        scale = scales.get((r["framework"], strategy(r)), 1.0)
        out.append({
            "model": r["model"], "strategy": strategy(r), "framework": r["framework"],
            "checkpointing": bool(r["activation_checkpointing"]),
            "measured": r["step_ms"], "composed": composed,
            "low": 1 - (1 - p["iteration_ms_low"] / p["iteration_ms"]) / scale,
            "high": 1 + (p["iteration_ms_high"] / p["iteration_ms"] - 1) / scale,
            "dp_comm": par.get("dp_comm_ms", 0),
            "launches": par.get("launches", 0), "units": float(par.get("units", 0)),
            "loop_ms": par.get("python_ms_per_launch", 0),
            "dispatch": par.get("dispatch_scale", 1),
            "collectives": collective_calls_per_unit(r) * float(par.get("units", 0)),
            "memory_measured": r["peak_allocated_gib"],
            "memory_predicted": p["memory"]["peak_bytes"] / 2**30,
        })
    return out


def predict(term, pt):
    per_launch = term["host_ms_per_launch"] + pt["loop_ms"] * (
        term["host_loop_scale"] * pt["dispatch"] + term["host_hook_scale"])
    host = (pt["launches"] * per_launch + pt["units"] * term["host_ms_per_unit"] +
            pt["collectives"] * term["host_ms_per_collective"])
    return max(pt["composed"] * (1 + term["gpu_scale"]) +
               pt["dp_comm"] * term["dp_comm_contention"], host)


def fit(pts, shape):
    grids = {name: shape.get(name, [0.0]) for name in TERMS}
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


def memory_ratio(pt):
    return pt["memory_measured"] / pt["memory_predicted"]


def memory_width_at(pts, level):
    """The band's half-width in log: the percentile of |log(measured / predicted)|."""
    return percentile([abs(math.log(memory_ratio(p))) for p in pts], level)


def held_out_memory_coverage(pts, name, level):
    """Of strategy `name`'s peaks, the share inside the width learned without their model."""
    inside = []
    for model in {p["model"] for p in pts if p["strategy"] == name}:
        others = [p for p in pts if p["model"] != model]
        if not others:
            continue
        width = memory_width_at(others, level)
        inside += [abs(math.log(memory_ratio(p))) <= width
                   for p in pts if p["model"] == model and p["strategy"] == name]
    return sum(inside) / len(inside) if inside else 0.0


def memory_band(pts, name):
    """Strategy `name`'s band over all the framework's layouts `pts`, its level set by
    leaving models out (the widest, every peak, where no level reaches the coverage)."""
    level = next((q for q in MEMORY_LEVELS
                  if held_out_memory_coverage(pts, name, q) >= COVERAGE), 1.0)
    width = memory_width_at(pts, level)
    return {"memory_low_ratio": math.exp(-width), "memory_high_ratio": math.exp(width)}


def fit_terms(pts):
    """The grid terms per (framework, strategy)."""
    terms = {}
    for key in sorted({(p["framework"], p["strategy"]) for p in pts}):
        if key[1] in SHAPES:
            terms[key] = fit([p for p in pts if (p["framework"], p["strategy"]) == key],
                             SHAPES[key[1]])
    return terms


def term_of(terms, pt):
    return terms.get((pt["framework"], pt["strategy"]), dict.fromkeys(TERMS, 0))


def reach(pt, step):
    """The scale of the answer's band about `step` that just reaches the measured step."""
    if pt["measured"] < step:
        return (step - pt["measured"]) / (step * (1 - pt["low"]))
    return (pt["measured"] - step) / (step * (pt["high"] - 1))


def held_out_reaches(pts):
    """(point, reach) of every row priced with terms fitted without its model."""
    out = []
    for model in sorted({p["model"] for p in pts}):
        terms = fit_terms([p for p in pts if p["model"] != model])
        out += [(p, reach(p, predict(term_of(terms, p), p))) for p in pts if p["model"] == model]
    return out


def interval_scales(pts):
    """interval_scale per (framework, strategy): see the module comment."""
    reaches = held_out_reaches(pts)
    scales = {}
    for framework in {p["framework"] for p in pts}:
        pooled = [r for p, r in reaches if p["framework"] == framework]
        for name in {p["strategy"] for p in pts if p["framework"] == framework}:
            own = [r for p, r in reaches if (p["framework"], p["strategy"]) == (framework, name)]
            scales[(framework, name)] = percentile(own if len(own) >= MIN_OWN_ROWS else pooled,
                                                   COVERAGE)
    return scales


def fit_all(pts):
    terms = fit_terms(pts)
    scales = interval_scales(pts)
    out = []
    for (framework, name), term in sorted(terms.items()):
        group = [p for p in pts if p["framework"] == framework and p["strategy"] == name]
        term = dict(term, interval_scale=scales[(framework, name)],
                    **memory_band([p for p in pts if p["framework"] == framework], name))
        out.append(dict(framework=framework, strategy=name, rows=len(group),
                        **{k: float("%.6g" % v) for k, v in term.items()}))
    return out


def holdout(pts, by="model"):
    results = {}
    for left_out in sorted({p[by] for p in pts}):
        terms = {(t["framework"], t["strategy"]): t for t in fit_all(
            [p for p in pts if p[by] != left_out])}
        for p in pts:
            if p[by] != left_out:
                continue
            term = term_of(terms, p)
            step = predict(term, p)
            err = (step - p["measured"]) / p["measured"]
            inside = reach(p, step) <= term.get("interval_scale", 1)
            memory = p["memory_predicted"]
            memory_inside = (memory * term.get("memory_low_ratio", 1) <= p["memory_measured"] <=
                             memory * term.get("memory_high_ratio", 1))
            for key in (p["strategy"], "checkpointing" if p["checkpointing"] else None, "all"):
                if key:
                    results.setdefault(key, []).append((err, inside, memory_inside))
    print("| strategy | rows | held-out MAPE | bias (median / mean) | coverage | memory coverage |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(results, key=lambda k: (k == "all", k == "checkpointing", k)):
        e = results[key]
        errs = [x[0] for x in e]
        print("| %s | %d | %.1f%% | %+.1f%% / %+.1f%% | %.0f%% | %.0f%% |" % (
            key, len(e), 100 * statistics.mean(abs(x) for x in errs),
            100 * statistics.median(errs), 100 * statistics.mean(errs),
            100 * sum(x[1] for x in e) / len(e), 100 * sum(x[2] for x in e) / len(e)))


def main(argv):
    flags = [a for a in argv[1:] if a.startswith("--")]
    paths = [a for a in argv[1:] if not a.startswith("--")]
    if len(paths) < 3 or len(paths) % 2 != 1:
        sys.exit(__doc__)
    pairs, out_path = list(zip(paths[0:-1:2], paths[1:-1:2])), paths[-1]
    pts = []
    for campaign, (rows, answers) in enumerate(pairs):
        pts += [dict(p, campaign=campaign) for p in points(rows, answers)]
    if "--holdout" in flags or "--cross" in flags:
        holdout(pts, "campaign" if "--cross" in flags else "model")
        return
    terms = fit_all(pts)
    # Terms of frameworks these rows do not measure (learned elsewhere) stay.
    fitted = {t["framework"] for t in terms}
    try:
        with open(out_path) as f:
            kept = [t for t in json.load(f).get("terms", []) if t["framework"] not in fitted]
    except FileNotFoundError:
        kept = []
    doc = {
        "source": "data/tools/fit_parallel_terms.py on data/multi-gpu/ %s (data/README.md: "
                  "Plain PyTorch on 2 x H200, and the hosts after it)" % " ".join(
                      os.path.basename(rows) for rows, _ in pairs),
        "terms": terms + kept,
    }
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for t in doc["terms"]:
        print(t)


if __name__ == "__main__":
    main(sys.argv)
