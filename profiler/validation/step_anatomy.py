#!/usr/bin/env python3
"""Where a plain PyTorch loop's step goes: host work, GPU work, and host syncs.

plain_loop.py times a user's loop (CUDA events around blocks of steps); when
it is slower than the agent on the same machine, this says why, per workload
key, with the same loop (plain_loop.make_step):

  step_ms       the loop's steady step (plain_loop.time_plain);
  gpu_ms        GPU time per step: kernels, copies and memsets under
                torch.profiler, summed (one stream, so the sum is the busy time);
  host_ms       the host's time to enqueue one step while the GPU is held busy
                by a spin kernel queued first (torch.cuda._sleep), so that no
                back-pressure from the GPU is in it; `host_valid` is false when
                the spin ended before the host did (then host_ms includes
                waiting: a sync inside the step, or a full launch queue);
  syncs         host-device synchronisations per step, counted by
                torch.cuda.set_sync_debug_mode("warn"), with the code lines
                that asked for them (`sync_sites`).

A loop whose host and GPU overlap runs at about max(host_ms, gpu_ms); a step
with a sync inside pays part of the host time on top of the GPU time.

    python3 profiler/validation/step_anatomy.py KEY [KEY ...] --out anatomy.json
  (each key in its own process)
    python3 profiler/validation/step_anatomy.py --store agent.sqlite --out anatomy.json

Keys are plain_loop's workload keys (perfcast's profile keys), e.g.
"model/vit{...}/b64/bf16-amp/inference/-"; with --store, every model key of
an agent store, and the agent's own step (`agent_ms`) beside the loop's.
"""

import argparse
import collections
import json
import sys
import time
import traceback
import warnings

import plain_loop


def _config(key):
    k = plain_loop.parse_key(key)
    return k, plain_loop.Config(key, k["family"], k["params"], k["batch"], k["precision"],
                                k["phase"], k["optimizer"], 0.0)


def gpu_ms_per_step(step, steps):
    """GPU busy time per step from torch.profiler's device events."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    total_us = 0.0
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            total_us += event.device_time if hasattr(event, "device_time") else event.cuda_time
    return total_us / 1e3 / steps


def spin_cycles_per_ms():
    import torch
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    return 10_000_000 / max(start.elapsed_time(end), 1e-6)


def host_ms_per_step(step, steps, budget_ms, cycles_per_ms):
    """Host time to enqueue `steps` steps behind a spin kernel of `budget_ms`."""
    import torch
    torch.cuda.synchronize()
    torch.cuda._sleep(int(budget_ms * cycles_per_ms))
    spin_done = torch.cuda.Event()
    spin_done.record()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    host = (time.perf_counter() - t0) * 1e3 / steps
    valid = not spin_done.query()
    torch.cuda.synchronize()
    return host, valid


def count_syncs(step, steps):
    """Synchronising calls per step, and where they were asked for."""
    import torch
    sites = collections.Counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(steps):
                step()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    n = 0
    for w in caught:
        if "synchroniz" not in str(w.message):
            continue
        n += 1
        sites["%s:%d" % (w.filename, w.lineno)] += 1
    torch.cuda.synchronize()
    return n / steps, {site: count / steps for site, count in sites.most_common(8)}


def anatomy(key, device, steps):
    """One key's figures. The profiler and the sync debug mode run last: once
    used, they leave the process's later Python steps slower (measured: the
    same loop 30% slower after them), so nothing is timed after them."""
    import torch
    k, config = _config(key)
    workload = plain_loop._builders()[k["family"]](dict(k["params"]), k["batch"])
    step = plain_loop.make_step(workload, config, device)
    step_ms = plain_loop.time_plain(workload, config, device, step=step)
    cycles = spin_cycles_per_ms()
    # The spin must outlast the host's work: a few plain steps' worth.
    host1, valid1 = host_ms_per_step(step, 1, 4 * step_ms + 50, cycles)
    host3, valid3 = host_ms_per_step(step, 3, 6 * step_ms + 50, cycles)
    again_ms = plain_loop.time_plain(workload, config, device, step=step)
    syncs, sites = count_syncs(step, 2)
    gpu = gpu_ms_per_step(step, steps)
    del step, workload
    torch.cuda.empty_cache()
    return {"key": key, "step_ms": step_ms, "step_ms_again": again_ms, "gpu_ms": gpu,
            "host_ms": host1, "host_valid": valid1, "host_ms_3": host3, "host_valid_3": valid3,
            "syncs_per_step": syncs, "sync_sites": sites,
            "max_ms": max(host1, gpu), "sum_ms": host1 + gpu}


def isolated(key, steps):
    """anatomy() of `key` in a new Python process, so that no earlier key's
    profiler session slows it."""
    import subprocess
    child = subprocess.run([sys.executable, __file__, "--one", key, "--steps", str(steps)],
                           capture_output=True, text=True)
    if child.returncode != 0:
        lines = child.stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else "exit code %d" % child.returncode)
    return json.loads(child.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keys", nargs="*")
    parser.add_argument("--store", help="agent store: time its model keys too")
    parser.add_argument("--out", default="anatomy.json")
    parser.add_argument("--steps", type=int, default=5, help="profiled steps per key")
    parser.add_argument("--deadline-s", type=float, default=0)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # isolated()'s child: one key, JSON out
    args = parser.parse_args(argv)
    import torch
    device = torch.device("cuda")
    if args.one:
        print(json.dumps(anatomy(args.one, device, args.steps)))
        return 0
    versions = {"torch": torch.__version__}
    for module in ("transformers", "torchvision"):
        try:
            versions[module] = __import__(module).__version__
        except ImportError:
            pass
    start = time.time()
    agent_ms = {}
    if args.store:
        agent_ms = {c.key: c.agent_ms for c in plain_loop.read_agent_configs(args.store)}
    keys = list(args.keys) + sorted(k for k in agent_ms if k not in args.keys)
    if not keys:
        parser.error("no keys: give KEYs or --store")
    results = []
    for key in keys:
        if args.deadline_s and time.time() - start > args.deadline_s:
            print("step_anatomy: deadline reached", flush=True)
            break
        try:
            r = isolated(key, args.steps)
        except Exception as e:  # one failing key must not end the run
            print("%s: failed: %s" % (key, traceback.format_exc().splitlines()[-1]), flush=True)
            continue
        if key in agent_ms:
            r["agent_ms"] = agent_ms[key]
        results.append(r)
        print("%s: agent %s step %.3f (again %.3f) gpu %.3f host %.3f%s syncs %.1f %s" % (
            key, "%.3f" % r["agent_ms"] if "agent_ms" in r else "-", r["step_ms"], r["step_ms_again"], r["gpu_ms"], r["host_ms"],
            "" if r["host_valid"] else " (waited)", r["syncs_per_step"],
            list(r["sync_sites"])[:3]), flush=True)
    with open(args.out, "w") as f:
        json.dump({"versions": versions, "results": results}, f, indent=1)
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
