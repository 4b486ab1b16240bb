#!/usr/bin/env python3
"""The plain-loop validation set on one GPU: PyTorch's precision names, each run twice.

    python3 profiler/validation/plain_loop_campaign.py --out rows.jsonl \
        [--deadline-s 480] [--rounds 2] [--plan full|smoke] [--only REGEX]

Times real architectures (torchvision ResNet-18/50 and ViT-B/16; Hugging Face
BERT-base/large, GPT-2 small/medium, OPT-125m/350m-like and a small Llama,
random weights) and the study's small proxies with plain_loop.py's loop and
timing (make_step / time_plain: batches prepared in pinned host memory and
copied with non_blocking=True, no host sync inside a step, CUDA events around
blocks, warm-up until two blocks agree within 2%, the median of 5 timed
blocks), train (Adam; loss, backward, step) and inference (no_grad), with
cudnn.benchmark on and the precision as PyTorch means it:

  fp32         PyTorch's defaults: cudnn.allow_tf32 True (TF32 convolutions),
               matmuls strict (float32_matmul_precision "highest")
  tf32         set_float32_matmul_precision("high"): TF32 matmuls as well
  strict-fp32  allow_tf32 False for convolutions and matmuls
  bf16-amp     autocast(bfloat16) around forward and loss, flags at defaults

Every configuration runs once per round; round 2 runs them in reverse order,
so that the loop's own run-to-run noise is measured beside each figure. Right
before each configuration, plain_loop's host probe (500 tiny adds queued
without a sync, from TorchScript and from Python) is stored with the row, and
so is what a training loop pays per kernel launch (plain_loop.LoopProbe: the
agent's Python probe's tiny model, forward, backward, AdamW and inference,
the loop_* keys of profiler/python_probe.py); the probe itself runs once at
the start in a child process (a row of kind "python_probe": the agent's
probe on this host, and the launch counts the per-launch keys divide by).

The host-cost probe (rows of kind "host_cost") prices a Python loop's host
work: the host time per call of typical small eager ops (linear, layer_norm,
gelu, add, add_), queued behind a spin kernel so that the GPU never holds the
host back, from a Python loop and from the same loop in TorchScript (C++'s
interpreter), and the host time of a small layer's forward (linear, layer
norm, gelu, residual add) with and without autograd's backward. Kernel counts
per call come from torch.profiler at the very end of the run (a profiler
session slows later Python steps).

One JSONL row per timing, appended as it is measured; the configuration list
and the keys are importable without torch (plain_loop_campaign_test.py).
"""

import argparse
import datetime
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plain_loop  # noqa: E402
import parallel_loop  # noqa: E402  (host and version records)

PRECISIONS = ("fp32", "tf32", "strict-fp32", "bf16-amp")
PHASES = ("train", "inference")
# precision -> (plain_loop's precision, matmul TF32, cuDNN TF32)
FLAGS = {"fp32": ("fp32", False, True), "tf32": ("fp32", True, True),
         "strict-fp32": ("fp32", False, False), "bf16-amp": ("bf16-amp", False, True)}

_GPT = dict(kv_heads=0, norm=0, mlp=0, bias=1, tied=1)
MODELS = [
    # name, family, perfcast parameters (all of them), batch, optimizer
    ("resnet18", "resnet_imagenet", dict(depth=18, image=224, classes=1000), 64, "adam"),
    ("resnet50", "resnet_imagenet", dict(depth=50, image=224, classes=1000), 64, "adam"),
    ("vit_b_16", "vit", dict(layers=12, hidden=768, heads=12, ffn=3072, patch=16, image=224,
                             classes=1000), 64, "adam"),
    ("bert-base", "bert", dict(layers=12, hidden=768, heads=12, ffn=3072, seq_len=128,
                               vocab=30522, positions=512, type_vocab=2), 32, "adam"),
    ("bert-large", "bert", dict(layers=24, hidden=1024, heads=16, ffn=4096, seq_len=128,
                                vocab=30522, positions=512, type_vocab=2), 16, "adam"),
    ("gpt2", "decoder", dict(_GPT, layers=12, hidden=768, heads=12, ffn=3072, seq_len=1024,
                             vocab=50257, positions=1024), 4, "adam"),
    ("gpt2-medium", "decoder", dict(_GPT, layers=24, hidden=1024, heads=16, ffn=4096,
                                    seq_len=1024, vocab=50257, positions=1024), 2, "adam"),
    # OPT's shapes (learned positions offset by 2, vocabulary 50272) in GPT-2's
    # block: perfcast describes both as norm=0 mlp=0 decoders.
    ("opt-125m-like", "decoder", dict(_GPT, layers=12, hidden=768, heads=12, ffn=3072,
                                      seq_len=1024, vocab=50272, positions=2050), 4, "adam"),
    ("opt-350m-like", "decoder", dict(_GPT, layers=24, hidden=1024, heads=16, ffn=4096,
                                      seq_len=1024, vocab=50272, positions=2050), 2, "adam"),
    ("llama-small", "decoder", dict(layers=8, hidden=1024, heads=16, kv_heads=4, ffn=2816,
                                    seq_len=1024, vocab=32000, positions=0, norm=1, mlp=1,
                                    bias=0, tied=0), 4, "adam"),
    ("lstm", "lstm", dict(hidden=256, horizon=12, layers=2, nodes=32, seq_len=24), 64, "adam"),
    ("cnn", "cnn", dict(channels=64, horizon=12, kernel=3, layers=4, nodes=32, seq_len=24), 64,
     "adam"),
    ("stgcn", "stgcn", dict(blocks=2, channels=64, horizon=3, kernel_t=3, nodes=32, seq_len=36),
     64, "adam"),
    ("resnet-proxy", "resnet", dict(blocks=4, classes=10, image=32, width=32), 64, "sgd"),
    ("transformer-proxy", "transformer", dict(classes=2, ffn=1024, heads=4, hidden=256, layers=4,
                                              seq_len=128, vocab=8192), 64, "adam"),
    ("dlrm", "dlrm", dict(bottom_layers=2, bottom_width=64, dense=13, emb_dim=64, lookups=4,
                          rows=10000, tables=8, top_layers=2, top_width=64), 256, "adam"),
]
SMOKE = [
    ("resnet18-s", "resnet_imagenet", dict(depth=18, image=64, classes=10), 8, "adam"),
    ("bert-tiny", "bert", dict(layers=2, hidden=128, heads=4, ffn=512, seq_len=64, vocab=1024,
                               positions=128, type_vocab=2), 4, "adam"),
    ("gpt2-tiny", "decoder", dict(_GPT, layers=2, hidden=128, heads=4, ffn=512, seq_len=64,
                                  vocab=1024, positions=128), 4, "adam"),
    ("llama-tiny", "decoder", dict(layers=2, hidden=128, heads=4, kv_heads=2, ffn=256,
                                   seq_len=64, vocab=1024, positions=0, norm=1, mlp=1, bias=0,
                                   tied=0), 4, "adam"),
    ("lstm", "lstm", dict(hidden=256, horizon=12, layers=2, nodes=32, seq_len=24), 16, "adam"),
]


def key(family, params, batch, precision, phase, optimizer):
    """perfcast's workload key (inference: optimizer '-')."""
    inner = ",".join("%s=%d" % (k, v) for k, v in sorted(params.items()))
    return "model/%s{%s}/b%d/%s/%s/%s" % (family, inner, batch, precision, phase,
                                          optimizer if phase == "train" else "-")


def configurations(models, precisions=PRECISIONS, phases=PHASES):
    """[(model entry, precision, phase)], grouped by model (a model is moved
    to the GPU once per group)."""
    return [(m, p, ph) for m in models for p in precisions for ph in phases]


def round_order(configs, round_index):
    """Round 1 (index 0) in order, round 2 reversed, and so on."""
    return list(configs) if round_index % 2 == 0 else list(reversed(configs))


def noise(rows):
    """Per configuration key, |round 2 / round 1 - 1| in percent, from rows
    of kind plain_loop: the median and p90 over keys."""
    by_key = {}
    for r in rows:
        if r.get("kind") == "plain_loop" and r.get("step_ms"):
            by_key.setdefault(r["key"], {})[r["round"]] = r["step_ms"]
    diffs = [abs(v[2] / v[1] - 1.0) * 100.0 for v in by_key.values() if 1 in v and 2 in v]
    return {"n": len(diffs), "median_pct": plain_loop.quantile(diffs, 0.5),
            "p90_pct": plain_loop.quantile(diffs, 0.9)}


# ---- The host-cost probe (torch) ----

def _spin_cycles_per_ms(torch):
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(20_000_000)
    end.record()
    end.synchronize()
    return 20_000_000 / max(start.elapsed_time(end), 1e-6)


def _host_us(torch, run, n, cycles_per_ms, spin_ms):
    """Host microseconds per call of run(n)'s loop, with the GPU held busy by
    a spin kernel queued first; valid when the spin outlasted the host."""
    torch.cuda.synchronize()
    torch.cuda._sleep(int(spin_ms * cycles_per_ms))
    spin_done = torch.cuda.Event()
    spin_done.record()
    t0 = time.perf_counter()
    run(n)
    us = (time.perf_counter() - t0) * 1e6 / n
    valid = not spin_done.query()
    torch.cuda.synchronize()
    return us, valid


def _scripted_loops(torch):
    import torch.nn.functional as F

    def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
        y = x
        for _ in range(n):
            y = F.linear(x, w, b)
        return y

    def layer_norm(x: torch.Tensor, g: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
        y = x
        for _ in range(n):
            y = F.layer_norm(x, [x.shape[-1]], g, b)
        return y

    def gelu(x: torch.Tensor, n: int) -> torch.Tensor:
        y = x
        for _ in range(n):
            y = F.gelu(x)
        return y

    def add(x: torch.Tensor, n: int) -> torch.Tensor:
        y = x
        for _ in range(n):
            y = torch.add(x, x)
        return y

    def add_(x: torch.Tensor, n: int) -> torch.Tensor:
        for _ in range(n):
            x.add_(1)
        return x

    def layer(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, g: torch.Tensor,
              beta: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, w, b)
        h = F.layer_norm(h, [h.shape[-1]], g, beta)
        return F.gelu(h) + x

    return {name: torch.jit.script(fn) for name, fn in
            (("linear", linear), ("layer_norm", layer_norm), ("gelu", gelu), ("add", add),
             ("add_", add_), ("layer", layer))}


def host_cost(device, rows_per_op=5, n=200, width=512, tokens=64):
    """Rows of kind host_cost: per op, the median host us per call from Python
    and from TorchScript."""
    import torch
    import torch.nn.functional as F
    for setter in ("_jit_set_texpr_fuser_enabled", "_jit_override_can_fuse_on_gpu"):
        try:  # no fusion: the same kernels from both interpreters
            getattr(torch._C, setter)(False)
        except Exception:
            pass
    cycles = _spin_cycles_per_ms(torch)
    x = torch.randn(tokens, width, device=device)
    w = torch.randn(width, width, device=device)
    b, g, beta = (torch.randn(width, device=device) for _ in range(3))
    y = torch.zeros(1, device=device)
    try:
        scripted = _scripted_loops(torch)
    except Exception as e:
        print("host_cost: no TorchScript: %s" % str(e).splitlines()[0], flush=True)
        scripted = {}

    def loop(fn):
        def run(k):
            for _ in range(k):
                fn()
        return run

    python = {"linear": loop(lambda: F.linear(x, w, b)),
              "layer_norm": loop(lambda: F.layer_norm(x, [width], g, beta)),
              "gelu": loop(lambda: F.gelu(x)), "add": loop(lambda: torch.add(x, x)),
              "add_": loop(lambda: y.add_(1))}
    ts = {}
    if scripted:
        ts = {"linear": lambda k: scripted["linear"](x, w, b, k),
              "layer_norm": lambda k: scripted["layer_norm"](x, g, beta, k),
              "gelu": lambda k: scripted["gelu"](x, k), "add": lambda k: scripted["add"](x, k),
              "add_": lambda k: scripted["add_"](y, k)}
    # The layer with autograd: inputs that need gradients.
    xg = x.clone().requires_grad_(True)
    wg, bg, gg, betag = (t.clone().requires_grad_(True) for t in (w, b, g, beta))

    def py_layer(h):
        h1 = F.linear(h, wg, bg)
        h1 = F.layer_norm(h1, [width], gg, betag)
        return F.gelu(h1) + h

    def fwd(fn):
        def run(k):
            with torch.no_grad():
                for _ in range(k):
                    fn(xg, wg, bg, gg, betag) if fn is not py_layer else fn(xg)
        return run

    def fwd_bwd(fn):
        def run(k):
            for _ in range(k):
                out = fn(xg, wg, bg, gg, betag) if fn is not py_layer else fn(xg)
                out.sum().backward()
        return run

    python["layer_forward"] = fwd(py_layer)
    python["layer_forward_backward"] = fwd_bwd(py_layer)
    if scripted:
        ts["layer_forward"] = fwd(scripted["layer"])
        ts["layer_forward_backward"] = fwd_bwd(scripted["layer"])
    rows = []
    for op in python:
        calls = n if not op.startswith("layer") else n // 4
        # Far beyond any host's dispatch: 200 us an op, 1 ms a layer.
        spin_ms = calls * (1.0 if op.startswith("layer") else 0.2)
        for f in (python[op], ts.get(op)):  # warm-up (TorchScript profiles its first runs)
            if f is not None:
                for _ in range(3):
                    f(calls)
        torch.cuda.synchronize()
        py, py_ok, t_s, ts_ok = [], True, [], True
        for _ in range(rows_per_op):
            us, ok = _host_us(torch, python[op], calls, cycles, spin_ms)
            py.append(us)
            py_ok &= ok
            if op in ts:
                us, ok = _host_us(torch, ts[op], calls, cycles, spin_ms)
                t_s.append(us)
                ts_ok &= ok
        rows.append({"kind": "host_cost", "op": op, "calls": calls, "shape": [tokens, width],
                     "python_us": plain_loop.quantile(py, 0.5), "python_us_all": py,
                     "python_valid": py_ok,
                     "torchscript_us": plain_loop.quantile(t_s, 0.5) if t_s else None,
                     "torchscript_us_all": t_s, "torchscript_valid": ts_ok if t_s else None})
    return rows, python


def kernels_per_call(python, calls=20):
    """CUDA kernels (and memcpy/memset) per call of each probe op, from torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    counts = {}
    for op, run in python.items():
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run(calls)
            torch.cuda.synchronize()
        n = sum(1 for e in prof.events()
                if e.device_type == torch.autograd.DeviceType.CUDA)
        counts[op] = n / calls
    return counts


# ---- The campaign ----

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="plain_loop_campaign.jsonl")
    parser.add_argument("--plan", default="full", help="full or smoke")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--deadline-s", type=float, default=480.0)
    parser.add_argument("--only", default="", help="regex on model names")
    parser.add_argument("--ring", type=int, default=4, help="pinned host batches per configuration")
    parser.add_argument("--no-host-cost", action="store_true")
    args = parser.parse_args(argv)
    start = time.time()
    models = SMOKE if args.plan == "smoke" else MODELS
    if args.only:
        models = [m for m in models if re.search(args.only, m[0])]
    import torch
    device = torch.device("cuda")
    host, versions = parallel_loop.host_info(), parallel_loop.versions_info()
    versions["nccl"] = None
    versions["cudnn"] = torch.backends.cudnn.version()
    stamp = {"host": host, "versions": versions}

    def append(row):
        row.update(stamp, date=datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"))
        with open(args.out, "a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")

    print("plain_loop_campaign: %s, %s cores; %s, driver %s; torch %s" % (
        host["cpu_model"], host["cpu_count"], versions.get("gpu"), versions.get("driver"),
        versions["torch"]), flush=True)
    probe_python = None
    if not args.no_host_cost:
        t0 = time.time()
        rows, probe_python = host_cost(device)
        for row in rows:
            append(row)
        print("host_cost (%.1f s): %s" % (time.time() - t0, "; ".join(
            "%s py %.1f us ts %s" % (r["op"], r["python_us"], "%.1f" % r["torchscript_us"]
                                     if r["torchscript_us"] else "-") for r in rows)), flush=True)
    builders = plain_loop._builders()
    try:
        scripted = plain_loop._scripted_adds()
    except Exception:
        scripted = None
    loop_probe = None
    probe = plain_loop.python_probe_line(device)
    if probe is not None:
        append(dict(probe, kind="python_probe"))
        print("python probe: %s" % json.dumps(probe), flush=True)
        loop_probe = plain_loop.LoopProbe(device, probe)
    configs = configurations(models)
    workloads, resident = {}, [None]
    results = []
    stop = False
    for round_index in range(args.rounds):
        for i, (model, precision, phase) in enumerate(round_order(configs, round_index)):
            if time.time() - start > args.deadline_s:
                print("plain_loop_campaign: deadline in round %d after %d configurations" % (
                    round_index + 1, i), flush=True)
                stop = True
                break
            name, family, params, batch, optimizer = model
            k = key(family, params, batch, precision, phase, optimizer)
            row = {"kind": "plain_loop", "round": round_index + 1, "model": name,
                   "family": family, "params": params, "batch": batch, "precision": precision,
                   "phase": phase, "optimizer": optimizer if phase == "train" else None,
                   "key": k, "cudnn_benchmark": True, "ring": args.ring,
                   "loop": "python (plain_loop.make_step)"}
            base, matmul_tf32, cudnn_tf32 = FLAGS[precision]
            row.update(matmul_tf32=matmul_tf32, cudnn_tf32=cudnn_tf32)
            try:
                if name not in workloads:
                    workloads[name] = builders[family](dict(params), batch)
                w = workloads[name]
                if resident[0] is not None and resident[0] != name:
                    workloads[resident[0]].model.to("cpu")
                    torch.cuda.empty_cache()
                resident[0] = name
                cpp_rate, python_rate = plain_loop.dispatch_rates(device, scripted)
                row.update(dispatch_torchscript_ops_per_s=cpp_rate,
                           dispatch_python_ops_per_s=python_rate)
                if loop_probe is not None:
                    row.update(loop_probe.measure())
                config = plain_loop.Config(k, family, params, batch, base, phase,
                                           optimizer, 0.0)
                w.model.to(device)
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                step = plain_loop.make_step(w, config, device, ring=args.ring,
                                            matmul_tf32=matmul_tf32, cudnn_tf32=cudnn_tf32,
                                            cudnn_benchmark=True)
                record = {}
                t0 = time.time()
                row["step_ms"] = plain_loop.time_plain(w, config, device, step=step,
                                                       record=record)
                row.update(record, wall_s=time.time() - t0,
                           peak_allocated_gib=torch.cuda.max_memory_allocated() / 2**30,
                           peak_reserved_gib=torch.cuda.max_memory_reserved() / 2**30)
                del step
            except Exception as e:  # one failing configuration must not end the run
                row["step_ms"] = None
                row["error"] = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
                row["oom"] = isinstance(e, torch.cuda.OutOfMemoryError)
                torch.cuda.empty_cache()
            append(row)
            results.append(row)
            print("[r%d %d/%d] %s: %s" % (round_index + 1, i + 1, len(configs), k,
                                          "%.3f ms" % row["step_ms"] if row["step_ms"] else
                                          "failed: %s" % row.get("error")), flush=True)
        if stop:
            break
    if probe_python is not None and time.time() - start < args.deadline_s + 30:
        try:
            counts = kernels_per_call(probe_python)
            append({"kind": "host_cost_kernels", "kernels_per_call": counts})
            print("kernels per call: %s" % counts, flush=True)
        except Exception as e:
            print("kernel count failed: %s" % str(e).splitlines()[0], flush=True)
    s = noise(results)
    print("plain_loop_campaign: %d timings in %.0f s; round 1 vs 2: n=%d median |diff| %.2f%%, "
          "p90 %.2f%%" % (len(results), time.time() - start, s["n"], s["median_pct"],
                          s["p90_pct"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
