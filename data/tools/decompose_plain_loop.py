#!/usr/bin/env python3
"""Where perfcast's error against the plain loop comes from, row by row (issue 30).

For every configuration of one or more plain-loop campaign files of ONE host
(data/plain-loop/*.jsonl) it splits predicted / measured - 1 into three factors:
  agent gap   the agent's own measured step of the same configuration (same key:
              model, batch, precision, phase, optimizer; the --import files) over
              the plain loop's measured step (the mean of every round of every file);
  model gap   perfcast's --loop cpp answer over the agent's measured step: the
              regression's own error on a configuration it was fitted on;
  loop share  perfcast's --loop python answer over its --loop cpp answer: what the
              Python-loop composition (predictor/python_loop.h) adds.
(1 + total) = (1 + agent gap) (1 + model gap) (1 + loop share). A configuration the
agent did not measure shows the total and the loop share only.

Usage (a fresh perfcastd on the agent files, the real architectures by their
sources, as data/tools/validate_plain_loop.py --as-sources):
  data/tools/decompose_plain_loop.py --perfcastd build-ci/server/perfcastd \\
      --perfcast build-ci/client/perfcast --import data/h200-m16-default.sqlite \\
      --import data/h200-m16-architectures.sqlite --node h200-sxm-16 \\
      data/plain-loop/h200-m16-plain-loop.jsonl data/plain-loop/h200-m16-plain-loop-r2.jsonl
--markdown prints the table as data/README.md holds it; --all adds the small proxies.
"""
import argparse
import os
import sqlite3
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate_plain_loop as vpl  # noqa: E402


def load_rounds(paths):
    """Configurations of every file, the measured step the mean of all their rounds."""
    merged = {}
    for path in paths:
        for c in vpl.load(path):
            m = merged.setdefault(c["key"], dict(c, timings=[]))
            m["timings"] += list(c["rounds"].values())
    for c in merged.values():
        c["measured_ms"] = statistics.mean(c["timings"])
        c["spread"] = (max(c["timings"]) / min(c["timings"]) - 1) if c["timings"] else None
    return sorted(merged.values(), key=lambda c: c["key"])


def agent_steps(paths):
    """Workload key -> the agent's measured mean step (the newest where several)."""
    steps = {}
    for path in paths:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        for key, mean_ms, at in db.execute(
                "SELECT w.key, p.mean_ms, p.measured_at_us FROM profiles p "
                "JOIN workloads w ON w.id = p.workload_id WHERE w.kind = 'model'"):
            if key not in steps or at > steps[key][1]:
                steps[key] = (mean_ms, at)
        db.close()
    return {k: v[0] for k, v in steps.items()}


def short(c):
    name = c["model"] or c["family"]
    return f"{name} b{c['batch']} {c['precision']} {c['phase']}"


def pct(x):
    return "" if x is None else f"{100 * x:+.1f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaigns", nargs="+", help="plain-loop JSON Lines files of one host")
    ap.add_argument("--perfcast", default="perfcast")
    ap.add_argument("--perfcastd", required=True, help="started on a fresh database")
    ap.add_argument("--import", dest="imports", action="append", required=True,
                    help="the agent's files of that host (repeatable)")
    ap.add_argument("--fit-arg", action="append", default=[])
    ap.add_argument("--node", required=True, help="the agent's node")
    ap.add_argument("--all", action="store_true", help="the small proxies too")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    configs = [c for c in load_rounds(args.campaigns) if args.all or c["family"] in vpl.REAL]
    agent = agent_steps(args.imports)
    server, cli = vpl.start_server(args.perfcastd, [args.perfcast], args.imports, args.fit_arg)
    try:
        target = ("node", args.node)
        cpp, _ = vpl.predict(cli, target, configs, {}, loop="cpp", as_sources=True)
        python, _ = vpl.predict(cli, target, configs, {}, loop="python", as_sources=True)
    finally:
        server.terminate()
        server.wait()

    rows = []
    for c, rc, rp in zip(configs, cpp, python):
        if rc.get("code", 0) or rp.get("code", 0):
            print(f"not predicted: {c['key']}", file=sys.stderr)
            continue
        g, p = rc["prediction"]["iteration_ms"], rp["prediction"]["iteration_ms"]
        a = agent.get(c["key"])
        rows.append({"name": short(c), "precision": c["precision"], "phase": c["phase"],
                     "loop_ms": c["measured_ms"], "spread": c["spread"], "agent_ms": a,
                     "cpp_ms": g, "python_ms": p, "total": p / c["measured_ms"] - 1,
                     "agent_gap": None if a is None else a / c["measured_ms"] - 1,
                     "model_gap": None if a is None else g / a - 1, "loop_share": p / g - 1})

    if args.markdown:
        print("| configuration | loop ms (spread) | agent ms | cpp ms | python ms | total | "
              "agent gap | model gap | loop share |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            agent_ms = "" if r["agent_ms"] is None else f"{r['agent_ms']:.2f}"
            print(f"| {r['name']} | {r['loop_ms']:.2f} ({100 * r['spread']:.0f}%) | {agent_ms} | "
                  f"{r['cpp_ms']:.2f} | {r['python_ms']:.2f} | {pct(r['total'])} | "
                  f"{pct(r['agent_gap'])} | {pct(r['model_gap'])} | {pct(r['loop_share'])} |")
    else:
        for r in rows:
            agent_ms = "-" if r["agent_ms"] is None else f"{r['agent_ms']:8.2f}"
            print(f"{r['name']:42} loop {r['loop_ms']:8.2f} agent {agent_ms:>8} cpp "
                  f"{r['cpp_ms']:8.2f} python {r['python_ms']:8.2f}  total {pct(r['total']):>7} "
                  f"agent {pct(r['agent_gap']):>7} model {pct(r['model_gap']):>7} "
                  f"loop {pct(r['loop_share']):>7}")

    print()
    groups = {}
    for r in rows:
        groups.setdefault(f"{r['precision']} {r['phase']}", []).append(r)
        groups.setdefault("all", []).append(r)
    print("group: median total / agent gap / model gap / loop share (rows with an agent step)")
    for name, members in sorted(groups.items()):
        measured = [r for r in members if r["agent_ms"] is not None]

        def med(field, rs):
            return statistics.median(r[field] for r in rs) if rs else None
        print(f"{name:24} {len(members):3d} rows: total {pct(med('total', members))} "
              f"(with agent: {len(measured)}, total {pct(med('total', measured))}, agent gap "
              f"{pct(med('agent_gap', measured))}, model gap {pct(med('model_gap', measured))}, "
              f"loop share {pct(med('loop_share', measured))}); loop share of all "
              f"{pct(med('loop_share', members))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
