#!/usr/bin/env python3
"""GPU kernels per step of the plain PyTorch loop, for comparing with the agent.

When plain_loop.py and the agent disagree on a GPU-bound step, the two ran
different kernels. This runs plain_loop.py's loop for each given workload key
under torch.profiler and writes, per key, every CUDA kernel's name, launches
per step and microseconds per step (CSV), so that the same table made from an
Nsight Systems trace of the agent (nsys stats --report cuda_gpu_kern_sum) can
be laid beside it.

    python3 profiler/validation/kernel_mix.py KEY [KEY ...] --out kernels.csv [--steps 10]
"""

import argparse
import collections
import csv
import sys

import plain_loop


def profile_key(key, steps, device):
    import torch
    from torch.profiler import ProfilerActivity, profile

    k = plain_loop.parse_key(key)
    config = plain_loop.Config(key, k["family"], k["params"], k["batch"], k["precision"],
                               k["phase"], k["optimizer"], 0.0)
    builders = plain_loop._builders()
    workload = builders[k["family"]](dict(k["params"]), k["batch"])
    # Warm the loop (and its cudnn/cublas choices) first: time_plain runs the
    # same closure the profiled steps use.
    step = plain_loop.make_step(workload, config, device)
    step_ms = plain_loop.time_plain(workload, config, device, blocks=1, max_warmup_blocks=2,
                                    step=step)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    per_kernel = collections.defaultdict(lambda: [0, 0.0])
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            entry = per_kernel[event.name]
            entry[0] += 1
            entry[1] += event.device_time
    torch.cuda.empty_cache()
    return step_ms, {name: (count / steps, us / steps) for name, (count, us) in per_kernel.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keys", nargs="+")
    parser.add_argument("--out", default="kernels.csv")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    import torch
    device = torch.device("cuda")
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["key", "step_ms", "kernel", "launches_per_step", "us_per_step"])
        for key in args.keys:
            step_ms, kernels = profile_key(key, args.steps, device)
            total = sum(us for _, us in kernels.values())
            print("%s: step %.3f ms, kernels %.3f ms a step, %d distinct" %
                  (key, step_ms, total / 1e3, len(kernels)), flush=True)
            for name, (launches, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1]):
                w.writerow([key, "%.4f" % step_ms, name, "%.2f" % launches, "%.2f" % us])
    return 0


if __name__ == "__main__":
    sys.exit(main())
