"""perfcast-agent's Python probe: host cost per operation of a Python loop.

    python3 python_probe.py [--device cuda|cpu] [--ops 500] [--rounds 9]

Prints one JSON line:

    {"python_version": "3.12.3", "torch_version": "2.11.0+cu130", "device": "cuda",
     "python_op_us": 8.1, "torchscript_op_us": 5.2, "ops": 500, "rounds": 9}

The measurement is profiler/validation/plain_loop.py's dispatch_rates: tiny
in-place adds queued without a host sync, timed on the host, dispatched from
a Python loop (what a user's script pays per operation) and from
TorchScript's interpreter (C++); each the median over `rounds` of `ops`
operations, in host microseconds per operation. torchscript_op_us is null
where TorchScript cannot compile the loop.

Exit status 3 when torch cannot be imported (the agent records "not
measured"), 2 on bad arguments. The agent ships this file compiled in and
runs it with the python it finds (profiler/python_probe.h).
"""
import argparse
import json
import platform
import sys
import time


def median(values):
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    if args.ops < 1 or args.rounds < 1:
        parser.error("--ops and --rounds must be positive")
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no torch"
        print("no torch: %s" % e, file=sys.stderr)
        return 3
    device = torch.device(args.device)
    x = torch.zeros(1, device=device)
    cuda = device.type == "cuda"

    def per_op_us(run):
        run(50)
        if cuda:
            torch.cuda.synchronize()
        values = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            run(args.ops)
            values.append(1e6 * max(time.perf_counter() - t0, 1e-9) / args.ops)
            if cuda:
                torch.cuda.synchronize()
        return median(values)

    def python_adds(n):
        for _ in range(n):
            x.add_(1)

    torchscript = None
    try:
        def adds(x: torch.Tensor, n: int) -> torch.Tensor:
            for _ in range(n):
                x.add_(1)
            return x
        scripted = torch.jit.script(adds)
        torchscript = per_op_us(lambda n: scripted(x, n))
    except Exception as e:  # noqa: BLE001 - TorchScript is optional
        print("torchscript: %s" % e, file=sys.stderr)
    python = per_op_us(python_adds)
    print(json.dumps({
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "device": args.device,
        "python_op_us": python,
        "torchscript_op_us": torchscript,
        "ops": args.ops,
        "rounds": args.rounds,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
