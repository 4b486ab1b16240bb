#!/usr/bin/env python3
"""Perfcast's answers against the plain PyTorch loop (issue 30, item 5).

Predicts every configuration of a plain-loop campaign file
(data/plain-loop/*.jsonl, rows of kind "plain_loop", written by
profiler/validation/plain_loop_campaign.py) through the CLI, one batch query
per configuration, and prints per group MAPE, signed bias (median and mean of
predicted / measured - 1: > 0 over-predicts) and 10-90% interval coverage,
beside the loop's own noise (|round 2 / round 1 - 1| of the same
configurations) and its floor (mean |round 1 - round 2| / (round 1 + round 2):
how far one round sits from the rounds' mean, the MAPE of an answer that were
exactly one round). Groups: the real architectures (decoder, bert, vit,
resnet_imagenet) per precision and phase, the study's small proxies per phase
and per precision.

The measured step of a configuration is the mean of its rounds. A precision
name the CLI does not know (strict-fp32 before it existed) is predicted as
--fallback-precision says (default: strict-fp32 as fp32, which is what the
agent's fp32 measured until issue 30).

Usage, against a running perfcastd with a fitted model:
  data/tools/validate_plain_loop.py --perfcast build-ci/client/perfcast \\
      --server 127.0.0.1:50051 --gpu H200-SXM-141GB data/plain-loop/h200x2-plain-loop.jsonl
or with a server of its own (a fresh SQLite file; the files imported, then fit):
  data/tools/validate_plain_loop.py --perfcastd build-ci/server/perfcastd \\
      --perfcast build-ci/client/perfcast --import data/h200-m10-default.sqlite \\
      --import data/h200-m12-architectures.sqlite data/plain-loop/h200x2-plain-loop.jsonl
Add --json for one JSON object per group. With --as-sources the real architectures are
described as the plain loop built them, a Hugging Face config.json (decoder, bert) or a
torchvision name (vit, resnet_imagenet), so that their implementations' effects (the
decoders' host sync per forward, the ViT's attention slow path) are priced as a user's
question would have them.
"""
import argparse
import csv
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REAL = {"decoder", "bert", "vit", "resnet_imagenet"}


def parse_key(key):
    """model/family{a=1,b=2}/bB/precision/phase/optimizer -> fields."""
    kind, rest = key.split("/", 1)
    brace = rest.index("}")
    family, params = rest[:brace].split("{", 1)
    batch, precision, phase, optimizer = rest[brace + 2:].split("/")
    return {"family": family, "params": params.replace(",", ";"), "batch": int(batch[1:]),
            "precision": precision, "phase": phase,
            "optimizer": "" if optimizer == "-" else optimizer}


def load(path):
    configs = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if row.get("kind") != "plain_loop" or not row.get("step_ms"):
                continue
            c = configs.setdefault(row["key"], {"key": row["key"], "rounds": {},
                                                "model": row.get("model", "")})
            c["rounds"][row.get("round", 1)] = row["step_ms"]
    for c in configs.values():
        c.update(parse_key(c["key"]))
        steps = list(c["rounds"].values())
        c["measured_ms"] = sum(steps) / len(steps)
        c["noise"] = (abs(c["rounds"][2] / c["rounds"][1] - 1)
                      if 1 in c["rounds"] and 2 in c["rounds"] else None)
    return sorted(configs.values(), key=lambda c: c["key"])


def run(cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r


def hf_config(c):
    """The config.json text the plain loop's transformers model of `c` corresponds to
    (profiler/validation/real_models.py), or None for a family it does not build so."""
    p = {k: int(v) for k, v in (kv.split("=") for kv in c["params"].split(";"))}
    if c["family"] == "bert":
        return {"model_type": "bert", "hidden_size": p["hidden"], "num_hidden_layers": p["layers"],
                "num_attention_heads": p["heads"], "intermediate_size": p["ffn"],
                "max_position_embeddings": p["positions"], "vocab_size": p["vocab"],
                "type_vocab_size": p["type_vocab"]}
    if c["family"] != "decoder":
        return None
    if p["norm"] == 0 and p["mlp"] == 0 and p["positions"] > 0:
        return {"model_type": "gpt2", "n_embd": p["hidden"], "n_layer": p["layers"],
                "n_head": p["heads"], "n_inner": p["ffn"], "n_positions": p["positions"],
                "vocab_size": p["vocab"], "tie_word_embeddings": bool(p["tied"])}
    return {"model_type": "llama", "hidden_size": p["hidden"], "num_hidden_layers": p["layers"],
            "num_attention_heads": p["heads"],
            "num_key_value_heads": p["kv_heads"] or p["heads"],
            "intermediate_size": p["ffn"], "max_position_embeddings": p["seq_len"],
            "vocab_size": p["vocab"], "tie_word_embeddings": bool(p["tied"]),
            "attention_bias": bool(p["bias"]), "mlp_bias": bool(p["bias"])}


def source_columns(c, workdir):
    """(family, params, hf_config, seq_len, torchvision, image) describing `c` by its
    source where the plain loop built it from one (--as-sources), else by its family."""
    config = hf_config(c)
    if config is not None:
        path = os.path.join(workdir, c["key"].replace("/", "_") + ".json")
        with open(path, "w") as f:
            json.dump(config, f)
        seq_len = dict(kv.split("=") for kv in c["params"].split(";"))["seq_len"]
        return ["", "", path, seq_len, "", ""]
    if c["family"] in ("vit", "resnet_imagenet") and c["model"]:
        image = dict(kv.split("=") for kv in c["params"].split(";"))["image"]
        return ["", "", "", "", c["model"], image]
    return [c["family"], c["params"], "", "", "", ""]


def predict(cli, target, configs, fallback, loop=None, as_sources=False):
    """One PredictBatch over every configuration (with loop: that --loop for all; with
    as_sources: the real architectures described by their sources); returns results in
    order."""
    workdir = tempfile.mkdtemp(prefix="validate-plain-loop-sources-")

    def write(names):
        handle, path = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(handle, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["family", "params", "hf_config", "seq_len", "torchvision", "image",
                        "batch_size", "precision", "phase", "optimizer",
                        target[0], "iterations"] + (["loop"] if loop else []))
            for c in configs:
                source = (source_columns(c, workdir) if as_sources else
                          [c["family"], c["params"], "", "", "", ""])
                w.writerow(source + [c["batch"], names.get(c["precision"], c["precision"]),
                                     c["phase"], c["optimizer"], target[1], 1] +
                           ([loop] if loop else []))
        return path

    names = {}
    for _ in range(2):
        path = write(names)
        r = run(cli + ["predict", "--batch-file", path, "-o", "json"], check=False)
        os.unlink(path)
        unknown = [p for p in fallback if f"unknown precision '{p}'" in r.stderr]
        if unknown and not names:
            names = {p: fallback[p] for p in unknown}
            continue
        if r.returncode not in (0, 3):
            sys.exit(f"perfcast predict --batch-file: exit {r.returncode}\n{r.stderr}")
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()], names
    sys.exit("perfcast predict --batch-file: precisions still unknown")


def percentile(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def summarize(name, rows):
    errors = [r["predicted_ms"] / r["measured_ms"] - 1 for r in rows]
    noise = [r["noise"] for r in rows if r["noise"] is not None]
    # How far one round sits from the rounds' mean: the MAPE of an answer that were exactly
    # one of the rounds, the error the loop's own noise leaves at the least.
    floor = [abs(r["rounds"][1] - r["rounds"][2]) / (r["rounds"][1] + r["rounds"][2])
             for r in rows if 1 in r["rounds"] and 2 in r["rounds"]]
    covered = [r["lo_ms"] <= r["measured_ms"] <= r["hi_ms"] for r in rows]
    return {"group": name, "rows": len(rows),
            "mape": statistics.mean(abs(e) for e in errors),
            "bias_median": statistics.median(errors), "bias_mean": statistics.mean(errors),
            "coverage": sum(covered) / len(covered),
            "noise_median": statistics.median(noise) if noise else float("nan"),
            "noise_p90": percentile(noise, 0.9),
            "noise_floor": statistics.mean(floor) if floor else float("nan")}


def start_server(perfcastd, cli, imports, fit_args):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    workdir = tempfile.mkdtemp(prefix="validate-plain-loop-")
    server = subprocess.Popen([perfcastd, f"--listen=127.0.0.1:{port}",
                               f"--db=sqlite://{workdir}/perfcast.db"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cli = cli + ["--server", f"127.0.0.1:{port}"]
    for _ in range(100):
        if run(cli + ["nodes", "list"], check=False).returncode == 0:
            break
        time.sleep(0.1)
    run(cli + ["import"] + imports)
    run(cli + ["fit"] + fit_args)
    return server, cli


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign", help="plain-loop JSON Lines file")
    ap.add_argument("--perfcast", default="perfcast", help="the CLI")
    ap.add_argument("--server", help="HOST:PORT of a perfcastd with a fitted model")
    ap.add_argument("--perfcastd", help="start this perfcastd on a fresh database instead")
    ap.add_argument("--import", dest="imports", action="append", default=[],
                    help="files to import into the fresh database (repeatable)")
    ap.add_argument("--fit-arg", action="append", default=[],
                    help="extra `perfcast fit` arguments for the fresh database (repeatable)")
    ap.add_argument("--gpu", default="H200-SXM-141GB", help="catalog GPU to predict on")
    ap.add_argument("--node", help="a registered node to predict on instead of --gpu")
    ap.add_argument("--fallback-precision", action="append", default=["strict-fp32=fp32"],
                    help="NAME=AS: predict NAME as AS where the CLI does not know NAME")
    ap.add_argument("--json", action="store_true", help="one JSON object per group")
    ap.add_argument("--as-sources", action="store_true",
                    help="describe the real architectures by their Hugging Face config or "
                         "torchvision name, as the plain loop built them")
    ap.add_argument("--rows", action="store_true",
                    help="also print each configuration: measured, predicted, band, method")
    args = ap.parse_args()

    configs = load(args.campaign)
    if not configs:
        sys.exit(f"{args.campaign}: no plain_loop rows")
    cli = [args.perfcast]
    server = None
    if args.perfcastd:
        if not args.imports:
            sys.exit("--perfcastd needs --import files to fit on")
        server, cli = start_server(args.perfcastd, cli, args.imports, args.fit_arg)
    elif args.server:
        cli += ["--server", args.server]
    try:
        target = ("node", args.node) if args.node else ("gpu", args.gpu)
        fallback = dict(item.split("=", 1) for item in args.fallback_precision)
        results, renamed = predict(cli, target, configs, fallback, as_sources=args.as_sources)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    rows, failed = [], []
    for c, r in zip(configs, results):
        if r.get("code", 0) != 0:
            failed.append((c["key"], r.get("error", "")))
            continue
        p = r["prediction"]
        rows.append(dict(c, predicted_ms=p["iteration_ms"], lo_ms=p["iteration_ms_low"],
                         hi_ms=p["iteration_ms_high"], method=p.get("method", "")))

    groups = {}
    for r in rows:
        real = r["family"] in REAL
        kind = "real" if real else "small"
        groups.setdefault(f"{kind} {r['precision']} {r['phase']}", []).append(r)
        groups.setdefault(f"{kind} {r['phase']}", []).append(r)
        groups.setdefault(kind, []).append(r)
    summaries = [summarize(name, members) for name, members in sorted(groups.items())]
    if args.json:
        for s in summaries:
            print(json.dumps(s))
    else:
        target_text = f"node {args.node}" if args.node else f"catalog GPU {args.gpu}"
        print(f"{len(rows)} configurations of {os.path.basename(args.campaign)} predicted on "
              f"{target_text}" + (f" ({', '.join(f'{k} as {v}' for k, v in renamed.items())})"
                                  if renamed else ""))
        print(f"{'group':28} {'rows':>4} {'MAPE':>7} {'bias med':>9} {'bias mean':>9} "
              f"{'cover':>6} {'noise med':>9} {'noise p90':>9} {'floor':>6}")
        for s in summaries:
            print(f"{s['group']:28} {s['rows']:4d} {100 * s['mape']:6.1f}% "
                  f"{100 * s['bias_median']:+8.1f}% {100 * s['bias_mean']:+8.1f}% "
                  f"{100 * s['coverage']:5.0f}% {100 * s['noise_median']:8.1f}% "
                  f"{100 * s['noise_p90']:8.1f}% {100 * s['noise_floor']:5.1f}%")
    if args.rows and not args.json:
        for r in rows:
            print(f"{100 * (r['predicted_ms'] / r['measured_ms'] - 1):+7.1f}%  measured "
                  f"{r['measured_ms']:9.3f}  predicted {r['predicted_ms']:9.3f} "
                  f"({r['lo_ms']:.3f} .. {r['hi_ms']:.3f})  {r['method']:22} {r['key']}")
    for key, error in failed:
        print(f"not predicted: {key}: {error}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
