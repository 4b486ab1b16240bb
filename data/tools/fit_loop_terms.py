#!/usr/bin/env python3
"""Fits and validates the Python loop's host terms (issue 30 item 2, predictor/python_loop.h).

A Python eager loop's step is composed from the agent's C++ step G and the
Python host time per step H = fixed_ms + (ops_per_call[phase] x Python calls +
ops_per_launch[phase] x launches) x per-op cost:  step = max(H + tail x G, G + lead x H).
--count says which of the descriptor's counts the fit may use (calls, launches or both; the
other's terms are held at 0).

Two stages.
  collect: starts perfcastd on a fresh database, imports the agent's files, fits, and
           predicts every configuration of a plain-loop campaign file with --loop cpp on
           the agent's node (its C++ step G, band, Python calls and kernel launches); adds the
           agent's
           own measured step of the same configuration where it measured one, the plain
           loop's per-op cost (1e6 / dispatch_python_ops_per_s of its rows) and the CPU
           scores of both hosts. Writes one JSON line per configuration.
  fit:     fits the terms on the collected rows that the agent measured (G = the agent's
           step: plain-loop rows against agent rows of the same configuration), prints
           leave-one-family-out validation (MAPE, signed bias, 10-90% coverage per group,
           with G = perfcast's C++ prediction and the per-op cost estimated from the agent
           host's CPU score, as the server does for a node without a probe), and writes
           the terms for predictor/python_loop_terms.json.
  probes:  one host's Python probes side by side: the agent's stored readings, the campaign's
           fresh-process probe, the plain loop's readings before each configuration (their two
           levels and the high one's share) and the rows' level over the agent's kept probe.
  loho:    leave one host out: for each per-op cost variant (the host's probe, one constant,
           the CPU score, a mixture), terms and band fitted on the other hosts' rows and
           the held-out host's rows predicted (MAPE, signed bias, coverage per host and
           group); --write-terms fits on every host with the first variant, the band from
           the scatter of hosts held out inside the fit (its quantiles of log error over
           share^power, the power of the host's share that scores best on them).

Usage:
  data/tools/fit_loop_terms.py collect --perfcastd build-ci/server/perfcastd \\
      --perfcast build-ci/client/perfcast --import data/h200-m13-default.sqlite \\
      --import data/h200-m13-architectures.sqlite --plain-host-score 342.95 \\
      data/plain-loop/h200-m13-plain-loop.jsonl > /tmp/m13.rows
  data/tools/fit_loop_terms.py fit /tmp/m13.rows [/tmp/other.rows ...] \\
      [--write-terms predictor/python_loop_terms.json]
  data/tools/fit_loop_terms.py loho --variants score,constant,probe,mix m13.rows m15.rows \\
      x2.rows m16.rows [--write-terms predictor/python_loop_terms.json]
"""
import argparse
import json
import math
import os
import sqlite3
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate_plain_loop as vpl  # noqa: E402

REAL = vpl.REAL
# What the fit composes: the agent's measured C++ step at the plain loop's probed per-op cost
# (the default: plain-loop rows against agent rows of the same configuration), or with
# --against-predictions perfcast's C++ prediction at the cost the server estimates.
G, OP = "agent_ms", "plain_op_us"


def agent_rows(paths):
    """key -> (median_ms, node name) of the newest method; node name -> CPU score; node name ->
    the Python probe the server keeps for it (its newest run's, as the store's import rules)."""
    steps, scores, probes = {}, {}, {}
    for path in paths:
        if not path.endswith(".sqlite"):
            continue
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        for name, score in db.execute("select name, cpu_single_thread_score from nodes"):
            scores[name] = score
        try:
            for name, probe, newest in db.execute(
                    "select n.name, n.python_op_us, max(p.measured_at_us) from nodes n "
                    "join profiles p on p.node_id = n.id group by n.id"):
                if probe and (name not in probes or newest > probes[name][1]):
                    probes[name] = (probe, newest)
        except sqlite3.OperationalError:  # a store from before the probe
            pass
        for key, median, method, node in db.execute(
                "select w.key, p.median_ms, p.method_version, n.name from profiles p "
                "join workloads w on p.workload_id = w.id join nodes n on p.node_id = n.id"):
            best = steps.get(key)
            if best is None or method > best[2]:
                steps[key] = (median, node, method)
        db.close()
    return ({k: (v[0], v[1]) for k, v in steps.items()}, scores,
            {k: v[0] for k, v in probes.items()})


def plain_costs(path):
    """key -> mean per-op Python cost (us) over the rounds' dispatch probes."""
    costs = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            rate = row.get("dispatch_python_ops_per_s")
            if row.get("kind") == "plain_loop" and rate:
                costs.setdefault(row["key"], []).append(1e6 / rate)
    return {k: statistics.mean(v) for k, v in costs.items()}


def collect(args):
    configs = vpl.load(args.campaign)
    steps, scores, probes = agent_rows(args.imports)
    nodes = sorted({node for _, node in steps.values()})
    node = args.node or (nodes[0] if len(nodes) == 1 else None)
    if node is None:
        sys.exit(f"--node: the imports hold nodes {nodes}; name the agent's")
    server, cli = vpl.start_server(args.perfcastd, [args.perfcast], args.imports, [])
    try:
        results, _ = vpl.predict(cli, ("node", node), configs, {}, loop="cpp")
    finally:
        server.terminate()
        server.wait()
    costs = plain_costs(args.campaign)
    for c, r in zip(configs, results):
        if r.get("code", 0) != 0:
            print(f"not predicted: {c['key']}: {r.get('error', '')}", file=sys.stderr)
            continue
        p = r["prediction"]
        agent = steps.get(c["key"])
        print(json.dumps({
            "campaign": os.path.basename(args.campaign), "key": c["key"],
            "family": c["family"], "phase": c["phase"], "precision": c["precision"],
            "real": c["family"] in REAL, "measured_ms": c["measured_ms"], "noise": c["noise"],
            "plain_op_us": costs.get(c["key"]), "plain_host_score": args.plain_host_score,
            "agent_ms": agent[0] if agent else None, "agent_host_score": scores.get(node),
            "agent_probe_us": probes.get(node),
            "cpp_ms": p["iteration_ms"], "cpp_lo_ms": p["iteration_ms_low"],
            "cpp_hi_ms": p["iteration_ms_high"],
            "launches": p.get("loop", {}).get("kernel_launches", 0),
            "python_calls": p.get("loop", {}).get("python_calls", 0)}))


# The implementation effects of the plain loop's models (models::ImplementationEffectsOf):
# its decoders are Hugging Face's (a host sync per forward), its ViT torchvision's
# (nn.MultiheadAttention's slow path in training and under autocast). The terms of each.
EFFECTS = {"heavy_dispatch_host_scale": 1.0, "sync_drain_train": 0.0,
           "sync_drain_inference": 0.0,
           "slow_path_autocast_inference": 1.0,
           "slow_path_autocast_train": 1.0, "slow_path_train": 1.0}


def effects_of(row):
    """(host sync per forward, the slow path's term name or None, heavy Python dispatch) of a
    plain-loop row: Hugging Face's decoders sync, torchvision's ViT takes the slow path,
    Hugging Face's BERT dispatches more Python per kernel."""
    sync = row["family"] == "decoder"
    heavy = row["family"] == "bert" and row["real"]
    slow = None
    if row["family"] == "vit":
        autocast = row["precision"].endswith("-amp")
        train = row["phase"] == "train"
        if autocast:
            slow = "slow_path_autocast_train" if train else "slow_path_autocast_inference"
        elif train:
            slow = "slow_path_train"
    return sync, slow, heavy


# The composition, as predictor/python_loop.cc computes it: a heavy dispatcher scales the
# host time, the slow path's GPU work scales the C++ step; a host sync per forward drains the queue, which costs most where
# host and GPU time are alike (min^2 / max) and little where one of them dominates.
def work(row):
    """(Python calls, kernel launches) per step of a collected row."""
    return row.get("python_calls", 0), row["launches"]


def compose(g, counts, phase, op_us, t, effects=(False, None, False)):
    sync, slow, heavy = effects
    if slow:
        g *= t[slow]
    calls, launches = counts
    ops = (t["ops_per_call_" + phase] * calls + t["ops_per_launch_" + phase] * launches)
    h = t["fixed_ms"] + ops * op_us / 1e3
    if heavy:
        h *= t["heavy_dispatch_host_scale"]
    host_bound = h + t["tail"] * g
    gpu_bound = g + t["lead"] * h
    step = max(host_bound, gpu_bound)
    if sync and h > 0 and g > 0:
        drain = t["sync_drain_train"] if phase == "train" else t["sync_drain_inference"]
        step += drain * min(h, g) ** 2 / max(h, g)
    return step, h


def band(row, t, op_us, op_lo, op_hi):
    """The composed step and its 10-90% band, as ApplyPythonLoop computes them: the C++ band
    and the cost's band composed, at least the phase's held-out scatter at the host's share
    around the step."""
    fx = effects_of(row)
    step, _ = compose(row["cpp_ms"], work(row), row["phase"], op_us, t, fx)
    share = (step - row["cpp_ms"]) / step
    reach = share ** t["log_error_share_power"]
    at = lambda g, op: compose(g, work(row), row["phase"], op, t, fx)[0]  # noqa: E731
    phase = row["phase"]
    lo = min(at(row["cpp_lo_ms"], op_lo), step * math.exp(reach * t["log_error_p10_" + phase]))
    hi = max(at(row["cpp_hi_ms"], op_hi), step * math.exp(reach * t["log_error_p90_" + phase]))
    return step, min(lo, step), max(hi, step), share


# Which of the descriptor's counts H may use (--count): the other's terms stay 0.
COUNTS = {"launches": ("launch",), "calls": ("call",), "both": ("call", "launch")}
COUNT = "both"


def terms_of(x):
    """The base terms from the free parameters: per count in COUNTS[COUNT] its train and
    inference ops, then fixed_ms, tail, lead."""
    t = {f"ops_per_{c}_{p}": 0.0 for c in ("call", "launch") for p in ("train", "inference")}
    i = 0
    for c in COUNTS[COUNT]:
        t[f"ops_per_{c}_train"], t[f"ops_per_{c}_inference"] = abs(x[i]), abs(x[i + 1])
        i += 2
    fixed, tail, lead = x[i:i + 3]
    t.update({"fixed_ms": abs(fixed), "tail": min(abs(tail), 1.0), "lead": min(abs(lead), 1.0)})
    return t


def loss(x, rows, effects):
    t = dict(terms_of(x), **effects)
    total = 0.0
    for r in rows:
        step, _ = compose(r[G], work(r), r["phase"], r[OP], t, effects_of(r))
        total += math.log(r["measured_ms"] / step) ** 2
    return total / len(rows)


def nelder_mead(f, x0, steps, iterations=3000):
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (steps[j] if j == i else 0) for j in range(n)]
                            for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=lambda i: values[i])
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = [sum(simplex[i][j] for i in range(n)) / n for j in range(n)]
        worst = simplex[-1]
        reflected = [centroid[j] + (centroid[j] - worst[j]) for j in range(n)]
        fr = f(reflected)
        if fr < values[0]:
            expanded = [centroid[j] + 2 * (centroid[j] - worst[j]) for j in range(n)]
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = [centroid[j] + 0.5 * (worst[j] - centroid[j]) for j in range(n)]
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [[best[j] + 0.5 * (s[j] - best[j]) for j in range(n)]
                                    for s in simplex[1:]]
                values = [values[0]] + [f(s) for s in simplex[1:]]
        if max(values) - min(values) < 1e-10:
            break
    i = min(range(n + 1), key=lambda k: values[k])
    return simplex[i]


def fit_base(rows, effects):
    n = len(COUNTS[COUNT])
    best = None
    for ops, rest in (([2.0, 1.0], [0.1, 0.1, 0.05]), ([4.0, 2.0], [0.0, 0.3, 0.0]),
                      ([1.0, 0.5], [0.5, 0.0, 0.2])):
        start = [o / n for o in ops] * n + rest
        x = nelder_mead(lambda v: loss(v, rows, effects), start, [0.5, 0.5] * n + [0.1, 0.1, 0.05])
        if best is None or loss(x, rows, effects) < loss(best, rows, effects):
            best = x
    return terms_of(best)


# Each effect's range and search step.
EFFECT_GRID = {"heavy_dispatch_host_scale": (1.0, 4.0, 0.01), "sync_drain_train": (0.0, 3.0, 0.01), "sync_drain_inference": (0.0, 3.0, 0.01),
               "slow_path_autocast_inference": (1.0, 2.0, 0.005),
               "slow_path_autocast_train": (1.0, 2.0, 0.005), "slow_path_train": (1.0, 2.0, 0.005)}


def fit_effects(rows, t, names=tuple(EFFECTS)):
    """Each effect term in `names` by least squares in log space over the rows it applies
    to, the other terms held; a term no row shows keeps t's value."""
    t = dict(t)
    for name in names:
        members = [r for r in rows if effects_of(r)[1] == name or (
            effects_of(r)[2] and name == "heavy_dispatch_host_scale") or (
            effects_of(r)[0] and name == f"sync_drain_{r['phase']}")]
        if not members:
            continue
        lo, hi, step = EFFECT_GRID[name]

        def cost(v):
            u = dict(t, **{name: v})
            return sum(math.log(r["measured_ms"] / compose(
                r[G], work(r), r["phase"], r[OP], u, effects_of(r))[0]) ** 2
                for r in members)
        values = [lo + i * step for i in range(int(round((hi - lo) / step)) + 1)]
        t[name] = min(values, key=cost)
    return t


def fit_terms(rows):
    """The base terms on every row as if no effect were there, then each implementation
    effect on the rows it touches with the base terms held. (Refitting the base with the
    effects in place, or on the untouched rows alone, moves it between distant local
    minima of tail and lead and makes the held-out small models worse.)"""
    t = dict(EFFECTS, **fit_base(rows, dict(EFFECTS)))
    return fit_effects(rows, t)


def quantile(values, q):
    return vpl.percentile(values, q)


def cost_terms(rows):
    """score_us, its spread, the probe's state (probe_state_terms), and the reference host's cost
    and spread, from the plain rows."""
    with_score = [r for r in rows if r["plain_op_us"] and r["plain_host_score"]]
    products = [r["plain_op_us"] * r["plain_host_score"] for r in with_score]
    score_us = statistics.median(products)
    ratios = [p / score_us for p in products]
    all_costs = [r["plain_op_us"] for r in rows if r["plain_op_us"]]
    reference = statistics.median(all_costs)
    per_campaign = {}
    for r in rows:
        if r["plain_op_us"]:
            per_campaign.setdefault(r["campaign"], []).append(r["plain_op_us"])
    medians = [statistics.median(v) for v in per_campaign.values()]
    # An unknown host: the rows' spread around their campaign's median, widened by the
    # hosts' own spread (their medians' range, at least the 1.5x DESIGN.md names).
    host_spread = max(max(medians) / min(medians), 1.5)
    within = [r["plain_op_us"] / statistics.median(per_campaign[r["campaign"]])
              for r in rows if r["plain_op_us"]]
    return {"score_us": score_us, "score_low": min(quantile(ratios, 0.1), 1.0),
            "score_high": max(quantile(ratios, 0.9), 1.0), **probe_state_terms(rows),
            "reference_us": reference,
            "reference_low": min(quantile(within, 0.1), 1.0) / math.sqrt(host_spread),
            "reference_high": max(quantile(within, 0.9), 1.0) * math.sqrt(host_spread)}


def probe_state_terms(rows):
    """What a loop's process pays per operation over the agent's stored probe of the same host
    (the probe reads a fresh process): on the hosts whose rows carry both, the median over
    hosts of their rows' level (the median row reading) over the agent's probe; 1 where no host
    has both."""
    hosts = {}
    for r in rows:
        if r.get("agent_probe_us") and r["plain_op_us"]:
            hosts.setdefault(host_of(r), []).append(r)
    return {"probe_state_factor": statistics.median(
        statistics.median(r["plain_op_us"] for r in rs) / rs[0]["agent_probe_us"]
        for rs in hosts.values()) if hosts else 1.0}


# The rows whose held-out errors measure the loop's scatter: those where the host adds at least
# this share of the step (below it the C++ band sets the interval).
HOST_SHARE = 0.1
# The powers of the host's share the scatter may grow with (0: as much at any share, 1: in
# proportion), chosen leaving one host out.
SHARE_POWERS = (0.25, 0.5, 0.75, 1.0)


def errors_of(rows, t, power):
    """Held-out log errors of host-bound rows over share^power, for the band, by phase."""
    out = {"train": [], "inference": []}
    for r in rows:
        step, _ = compose(r["cpp_ms"], work(r), r["phase"], r["est_op_us"], t,
                          effects_of(r))
        share = (step - r["cpp_ms"]) / step
        if share > HOST_SHARE:
            out[r["phase"]].append(math.log(r["measured_ms"] / step) / share ** power)
    return out


def scatter_terms(errs, power):
    """The band's terms from held-out scaled errors by phase (errors_of): each phase's 10th
    and 90th percentile (a training step's loop scatters less than an inference forward's)."""
    out = {"log_error_share_power": power}
    for phase in ("train", "inference"):
        e = errs.get(phase, [])
        out["log_error_p10_" + phase] = min(quantile(e, 0.1), 0.0) if e else 0.0
        out["log_error_p90_" + phase] = max(quantile(e, 0.9), 0.0) if e else 0.0
    return out


def summarize(name, rows, key):
    errors = [r[key] / r["measured_ms"] - 1 for r in rows]
    covered = [r[key + "_lo"] <= r["measured_ms"] <= r[key + "_hi"] for r in rows]
    return (f"{name:26} {len(rows):4d} {100 * statistics.mean(abs(e) for e in errors):6.1f}% "
            f"{100 * statistics.median(errors):+8.1f}% {100 * sum(covered) / len(covered):5.0f}%")


def fit(args):
    rows = []
    for path in args.rows:
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    for r in rows:
        r["est_op_us"] = None
    costs = cost_terms([r for r in rows if not args.fit_on or args.fit_on in r["campaign"]])
    for r in rows:
        r["est_op_us"] = costs["score_us"] / r["agent_host_score"]
    global G, OP
    if args.against_predictions:
        G, OP = "cpp_ms", "est_op_us"
    fitted_on = [r for r in rows if not args.fit_on or args.fit_on in r["campaign"]]
    trainable = [r for r in fitted_on if r[G] and r[OP] and r["launches"]]
    families = sorted({r["family"] for r in rows})
    global effects_of
    if args.no_effects:
        effects_of = lambda row: (False, None, False)  # noqa: E731
    # Leave one family out: terms (and the band's errors) fitted without the family. An
    # effect only its own family shows (the decoders' sync, the ViT's slow path) is fitted
    # on that family's rows of the other campaigns: leave one host's campaign out.
    for family in families:
        train = [r for r in trainable if r["family"] != family]
        base = fit_terms(train)
        base.update(scatter_terms(
            errors_of([r for r in fitted_on if r["family"] != family], base, 1.0), 1.0))
        for r in rows:
            if r["family"] != family:
                continue
            t = fit_effects([o for o in trainable if o["family"] == family and
                             o["campaign"] != r["campaign"]], base)
            for key, op_us in (("py", r["est_op_us"]), ("probe", r["plain_op_us"])):
                if op_us is None:
                    op_us = r["est_op_us"]
                lo_f, hi_f = (costs["score_low"], costs["score_high"]) if key == "py" else (1, 1)
                step, lo, hi, _ = band(r, t, op_us, op_us * lo_f, op_us * hi_f)
                r[key], r[key + "_lo"], r[key + "_hi"] = step, lo, hi
            r["cpp"], r["cpp_lo"], r["cpp_hi"] = r["cpp_ms"], r["cpp_lo_ms"], r["cpp_hi_ms"]
    t = fit_terms(trainable)
    t.update(scatter_terms(errors_of(fitted_on, t, 1.0), 1.0))
    t.update(costs)
    t = {k: round(v, 6) for k, v in t.items()}
    t = {"source": "data/tools/fit_loop_terms.py fit " + " ".join(
        os.path.basename(p) for p in args.rows) +
        (" --against-predictions" if args.against_predictions else "") +
        (f" --fit-on {args.fit_on}" if args.fit_on else "") +
        " (data/README.md: the Python loop)", **t}
    print(f"{len(rows)} configurations, {len(trainable)} with an agent row of the same "
          f"configuration (fit); terms on all of them:\n{json.dumps(t, indent=1)}")
    print("\nleave one family out (terms and band fitted without the family; G = perfcast's "
          "C++ prediction on the agent's node):")
    print(f"{'group':26} {'rows':>4} {'MAPE':>7} {'bias med':>9} {'cover':>6}   "
          f"{'loop':6}")
    groups = {}
    for r in rows:
        kind = "real" if r["real"] else "small"
        groups.setdefault(f"{kind} {r['phase']}", []).append(r)
        groups.setdefault(kind, []).append(r)
        if args.by_family and r["real"]:
            groups.setdefault(f"{r['family']} {r['phase']}", []).append(r)
        if args.by_precision:
            groups.setdefault(f"{kind} {r['precision']} {r['phase']}", []).append(r)
        if args.by_campaign:
            campaign = r["campaign"].split("-plain-loop")[0]
            groups.setdefault(f"{campaign} {kind} {r['phase']}", []).append(r)
    for name in sorted(groups):
        for key, label in (("cpp", "cpp (today)"), ("py", "python, cost from CPU score"),
                           ("probe", "python, cost probed per row")):
            print(summarize(name, groups[name], key) + f"   {label}")
    if args.write_terms:
        with open(args.write_terms, "w") as f:
            json.dump(t, f, indent=1)
            f.write("\n")


def host_of(row):
    """The host a row's plain loop ran on: its campaign's name without the round suffix."""
    return row["campaign"].split("-plain-loop")[0]


# Where a held-out host's per-op cost comes from (--variants): its own tiny-add probe (the
# plain loop's, the campaign's median), one constant for every host (the training rows'
# median), its CPU score (score_us / the agent host's score), or half of the probe's
# deviation from the constant (log-linear: constant x (probe / constant)^0.5).
VARIANTS = ("probe", "constant", "score", "mix")


def assign_costs(rows, train, variant, probe):
    """Sets row["op"] and its band factors row["op_lo_f"], row["op_hi_f"] for `variant`, with
    the constants learned on `train` only."""
    costs = cost_terms(train)
    for r in rows:
        ref = costs["reference_us"]
        if variant == "probe":
            r["op"], lo, hi = probe[host_of(r)], 1.0, 1.0
        elif variant == "constant":
            r["op"], lo, hi = ref, costs["reference_low"], costs["reference_high"]
        elif variant == "score":
            r["op"] = costs["score_us"] / r["agent_host_score"]
            lo, hi = costs["score_low"], costs["score_high"]
        else:
            r["op"], lo, hi = ref * math.sqrt(probe[host_of(r)] / ref), 1.0, 1.0
        r["op_lo_f"], r["op_hi_f"] = lo, hi


def held_out_errors(rows, t, power):
    """errors_of at each row's assigned cost."""
    for r in rows:
        r["est_op_us"] = r["op"]
    return errors_of(rows, t, power)


def interval_score(held):
    """Mean 10-90% interval score in log space (width, plus 10x each miss's distance) of
    held-out (row, terms) pairs whose host adds at least HOST_SHARE: lower is better, and
    it rewards a band that covers 80% with the least width."""
    scores = []
    for r, t in held:
        step, lo, hi, share = band(r, t, r["op"], r["op"] * r["op_lo_f"], r["op"] * r["op_hi_f"])
        if share > HOST_SHARE:
            y, low, high = math.log(r["measured_ms"]), math.log(lo), math.log(hi)
            scores.append(high - low + 10 * max(low - y, 0) + 10 * max(y - high, 0))
    return statistics.mean(scores) if scores else 0.0


def fit_hosts(train, variant, probe):
    """Terms fitted on `train` (G = perfcast's C++ prediction, the variant's cost) with the
    band from leave-one-host-out errors inside `train`: the scatter an unseen host shows, and
    the power of the host's share it grows with, the one whose band scores best on those
    held-out hosts."""
    global G, OP
    G, OP = "cpp_ms", "op"
    assign_costs(train, train, variant, probe)
    t = fit_terms([r for r in train if r["launches"]])
    held = []
    for inner in sorted({host_of(r) for r in train}):
        fit_rows = [r for r in train if host_of(r) != inner]
        assign_costs(fit_rows, fit_rows, variant, probe)
        ti = fit_terms([r for r in fit_rows if r["launches"]])
        test = [dict(r) for r in train if host_of(r) == inner]
        assign_costs(test, fit_rows, variant, probe)
        held += [(r, ti) for r in test]
    best = None
    for power in SHARE_POWERS:
        errs = {}
        for inner in sorted({host_of(r) for r, _ in held}):
            rows = [(r, ti) for r, ti in held if host_of(r) == inner]
            for phase, e in held_out_errors([r for r, _ in rows], rows[0][1], power).items():
                errs.setdefault(phase, []).extend(e)
        scatter = scatter_terms(errs, power)
        score = interval_score([(r, dict(ti, **scatter)) for r, ti in held])
        if best is None or score < best[0]:
            best = (score, scatter)
    t.update(best[1])
    return t


def loho(args):
    rows = []
    for path in args.rows:
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    rows = [r for r in rows if r["cpp_ms"] and r["plain_op_us"]]
    probe = {}
    for r in rows:
        probe.setdefault(host_of(r), []).append(r["plain_op_us"])
    probe = {h: statistics.median(v) for h, v in probe.items()}
    for override in args.probe:
        h, us = override.split("=")
        probe[h] = float(us)
    hosts = sorted(probe)
    print("per-op probe by host (us): " + ", ".join(f"{h} {probe[h]:.2f}" for h in hosts))
    print(f"{'variant':9} {'held out':10} {'group':16} {'rows':>4} {'MAPE':>7} {'bias med':>9} "
          f"{'cover':>6}")
    global COUNT
    COUNT = args.count
    for variant in args.variants.split(","):
        pooled = {}
        for hold in hosts:
            train = [r for r in rows if host_of(r) != hold]
            test = [r for r in rows if host_of(r) == hold]
            t = fit_hosts(train, variant, probe)
            print(f"{variant:9} {hold:10} band: share^{t['log_error_share_power']} x train "
                  f"({t['log_error_p10_train']:.3f}, {t['log_error_p90_train']:.3f}), inference "
                  f"({t['log_error_p10_inference']:.3f}, {t['log_error_p90_inference']:.3f})")
            assign_costs(test, train, variant, probe)
            groups = {}
            for r in test:
                step, lo, hi, _ = band(r, t, r["op"], r["op"] * r["op_lo_f"], r["op"] * r["op_hi_f"])
                r["py"], r["py_lo"], r["py_hi"] = step, lo, hi
                g = f"{'real' if r['real'] else 'small'} {r['phase']}"
                groups.setdefault(g, []).append(dict(r))
                pooled.setdefault(g, []).append(dict(r))
            for g in sorted(groups):
                print(summarize(f"{variant:9} {hold:10} {g}", groups[g], "py"))
        for g in sorted(pooled):
            print(summarize(f"{variant:9} {'all':10} {g}", pooled[g], "py"))
    if args.write_terms:
        variant = args.variants.split(",")[0]
        t = fit_hosts(rows, variant, probe)
        assign_costs(rows, rows, variant, probe)
        t.update(cost_terms(rows))
        t = {k: round(v, 6) for k, v in t.items()}
        t = {"source": "data/tools/fit_loop_terms.py loho --variants " + variant + " --count " +
             args.count + " " + " ".join(
            os.path.basename(p) for p in args.rows) + " (data/README.md: the host's cost)", **t}
        print(json.dumps(t, indent=1))
        with open(args.write_terms, "w") as f:
            json.dump(t, f, indent=1)
            f.write("\n")


def two_levels(values):
    """The split of sorted `values` into a low and a high group with the least summed squared
    deviation in log space: (low group, high group)."""
    v = sorted(math.log(x) for x in values)
    best = None
    for i in range(1, len(v)):
        lo, hi = v[:i], v[i:]
        cost = sum((x - statistics.mean(lo)) ** 2 for x in lo) + \
            sum((x - statistics.mean(hi)) ** 2 for x in hi)
        if best is None or cost < best[0]:
            best = (cost, i)
    s = sorted(values)
    return s[:best[1]], s[best[1]:]


def probes(args):
    """One host's Python probes: the agent's (each store's node reading, and the one the
    server keeps), the campaign's fresh-process probe (its python_probe row), and the plain
    loop's readings right before each configuration (median, its two levels and the high
    level's share, and the rows' level: the median over configurations of their rounds' mean,
    the unit the terms are fitted in), with the rows' level over the kept agent probe."""
    readings, fresh, rounds = [], [], {}
    with open(args.campaign) as f:
        for line in f:
            row = json.loads(line)
            if row.get("kind") == "plain_loop" and row.get("dispatch_python_ops_per_s"):
                readings.append(1e6 / row["dispatch_python_ops_per_s"])
                if row["family"] not in REAL:
                    rounds.setdefault((row["key"], row["phase"]), []).append(
                        (readings[-1], row["step_ms"]))
            elif row.get("kind") == "python_probe" and row.get("python_op_us"):
                fresh.append(row["python_op_us"])
    runs = []
    for path in args.imports:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            runs += [(os.path.basename(path), us) for (us,) in
                     db.execute("select python_op_us from nodes where python_op_us is not null")]
        except sqlite3.OperationalError:  # a store from before the probe
            pass
        db.close()
    kept = agent_rows(args.imports)[2]
    kept = next(iter(kept.values()), None) if len(kept) == 1 else kept.get(args.node)
    low, high = two_levels(readings)
    level = statistics.median(plain_costs(args.campaign).values())
    # A small configuration timed twice whose two readings fell in different levels: its step
    # after the high reading over its step after the low one.
    moved = {}
    for (key, phase), timed in rounds.items():
        if len(timed) == 2 and (timed[0][0] > low[-1]) != (timed[1][0] > low[-1]):
            (_, step_low), (_, step_high) = sorted(timed)
            moved.setdefault(phase, []).append(step_high / step_low)
    print(f"{os.path.basename(args.campaign)}: agent probe "
          + (", ".join(f"{name} {us:.2f}" for name, us in runs) or "none")
          + (f" (kept {kept:.2f})" if kept else "")
          + "; campaign's fresh probe " + (", ".join(f"{us:.2f}" for us in fresh) or "none")
          + f"; before each configuration (n={len(readings)}) median "
          f"{statistics.median(readings):.2f}, levels {statistics.median(low):.2f} / "
          f"{statistics.median(high):.2f} (high share {len(high) / len(readings):.2f}); "
          f"rows' level {level:.2f}" + (f", over the kept agent probe {level / kept:.2f}"
                                         if kept else "")
          + "".join(f"; small {phase} step after a high over after a low reading "
                    f"{statistics.median(v):.2f} (n={len(v)})" for phase, v in sorted(moved.items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="stage", required=True)
    c = sub.add_parser("collect")
    c.add_argument("campaign")
    c.add_argument("--perfcastd", required=True)
    c.add_argument("--perfcast", required=True)
    c.add_argument("--import", dest="imports", action="append", default=[])
    c.add_argument("--node", help="the agent's node (default: the only node of the imports)")
    c.add_argument("--plain-host-score", type=float, default=None,
                   help="the plain loop's host CPU score (perfcast-agent fingerprint)")
    f = sub.add_parser("fit")
    f.add_argument("rows", nargs="+")
    f.add_argument("--write-terms")
    f.add_argument("--fit-on", help="fit the terms and the band on the campaigns whose file "
                   "name contains this only (the others are predicted with them)")
    f.add_argument("--by-campaign", action="store_true",
                   help="also print each campaign's groups")
    f.add_argument("--by-family", action="store_true",
                   help="also print each real architecture family's groups")
    f.add_argument("--by-precision", action="store_true",
                   help="also print each precision's groups")
    f.add_argument("--no-effects", action="store_true",
                   help="compose without the models' implementation effects (as before them)")
    f.add_argument("--against-predictions", action="store_true",
                   help="fit on every row against perfcast's C++ prediction instead of the "
                        "agent's rows of the same configuration")
    p = sub.add_parser("probes", help="one host's Python probes: the agent's, the campaign's "
                       "fresh one, and the plain loop's before each configuration")
    p.add_argument("campaign")
    p.add_argument("--import", dest="imports", action="append", default=[])
    p.add_argument("--node", help="the agent's node where the imports hold several")
    h = sub.add_parser("loho", help="leave one host out: the per-op cost's variants compared")
    h.add_argument("rows", nargs="+")
    h.add_argument("--variants", default=",".join(VARIANTS),
                   help="comma-separated of " + ", ".join(VARIANTS) + " (the first is written)")
    h.add_argument("--probe", action="append", default=[],
                   help="HOST=US: that host's probe instead of its plain loop's median")
    h.add_argument("--write-terms", help="terms fitted on every host with the first variant, "
                   "the band from leave-one-host-out errors")
    h.add_argument("--count", choices=sorted(COUNTS), default="both",
                   help="what the host time counts: Python calls, kernel launches or both")
    args = ap.parse_args()
    return {"collect": collect, "fit": fit, "loho": loho, "probes": probes}[args.stage](args)


if __name__ == "__main__":
    sys.exit(main())
