"""perfcast-agent's Python probe: host cost per operation of a Python loop.

    python3 python_probe.py [--device cuda|cpu] [--ops 500] [--rounds 9] [--steps 20]
                            [--state-samples 0] [--state-work-s 0.5]

Prints one JSON line:

    {"python_version": "3.12.3", "torch_version": "2.11.0+cu130", "device": "cuda",
     "python_op_us": 8.1, "torchscript_op_us": 5.2, "ops": 500, "rounds": 9,
     "loop_forward_us": 140.2, "loop_backward_us": 260.0, "loop_optimizer_us": 95.1,
     "loop_inference_us": 120.7, "loop_forward_launches": 17, ...,
     "loop_forward_us_per_launch": 8.2, ..., "loop_train_us_per_launch": 9.4,
     "loop_model": "8 x (Linear(32, 32), ReLU), Linear(32, 1), batch 1, AdamW",
     "loop_launch_unit": "kernels", "loop_steps": 20}

python_op_us and torchscript_op_us are profiler/validation/plain_loop.py's
dispatch_rates: tiny in-place adds queued without a host sync, timed on the
host, dispatched from a Python loop (what a user's script pays per
operation) and from TorchScript's interpreter (C++); each the median over
`rounds` of `ops` operations, in host microseconds per operation.
torchscript_op_us is null where TorchScript cannot compile the loop.

The loop_* keys time what a training loop pays per launch, which a queue of
tiny adds does not show (autograd's backward, the optimizer's per-parameter
work, nn.Module's call path): a tiny nn.Module model (TinyLoop) trained from
Python at batch 1 on the device, steps queued without a host sync so that
the host binds; the host microseconds per step of the training forward
(with its loss), backward, optimizer (AdamW, PyTorch's default
implementation, step and zero_grad) and an inference forward under no_grad,
each the median over `rounds` of `steps` steps. Their kernel launches per
step are counted once, after the timing (a profiler session slows the
Python that follows it): CUDA kernels, copies and memsets from
torch.profiler on a GPU; on the CPU, which launches no kernels, the ATen
operations dispatched ("loop_launch_unit" says which). *_us_per_launch is
the phase's host time over its launches (null where none was counted);
loop_train_us_per_launch is the training step's (forward, backward,
optimizer) over its launches.

With --state-samples N the probe also times the tiny adds in the state a
user's loop runs in: a process that trains a mid-sized model (StateModel)
between readings. N times it trains that model for --state-work-s seconds,
synchronises, then reads the tiny adds from Python and from TorchScript
(3 rounds of `ops`, as the plain loop's dispatch_rates right before each
configuration); state_python_op_us / state_torchscript_op_us are the
medians over the N readings, *_all every reading, state_cpu_all the CPU
each reading ran on (from /proc; null where unreadable). A plain loop's
per-configuration readings on one host fall in two levels a constant few
microseconds apart, for Python and TorchScript alike, in host-dependent
shares, while a single short reading in a fresh process lands in one of
them: the spread of readings says which the host gives a loop
(data/README.md).

Exit status 3 when torch cannot be imported (the agent records "not
measured"), 2 on bad arguments. The agent ships this file compiled in and
runs it with the python it finds (profiler/python_probe.h); the plain-loop
validation imports TinyLoop and loop_host_us from it.
"""
import argparse
import json
import platform
import sys
import time

PHASES = ("forward", "backward", "optimizer", "inference")
TRAIN_PHASES = ("forward", "backward", "optimizer")


def median(values):
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


class TinyLoop:
    """A tiny model's training and inference loop, one phase per method:
    `layers` x (Linear(width, width), ReLU), then Linear(width, 1), at
    `batch` on `device`, MSE loss, AdamW at PyTorch's defaults (multi-tensor
    on CUDA). Small enough that the GPU's work per kernel stays below the
    host's dispatch, so that the host binds."""

    def __init__(self, torch, device, layers=8, width=32, batch=1):
        from torch import nn
        self.torch = torch
        self.description = "%d x (Linear(%d, %d), ReLU), Linear(%d, 1), batch %d, AdamW" % (
            layers, width, width, width, batch)
        torch.manual_seed(0)
        modules = []
        for _ in range(layers):
            modules += [nn.Linear(width, width), nn.ReLU()]
        modules.append(nn.Linear(width, 1))
        self.model = nn.Sequential(*modules).to(device)
        self.optimizer_ = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.x = torch.randn(batch, width, device=device)
        self.y = torch.randn(batch, 1, device=device)
        self.loss = None

    def forward(self):
        self.loss = self.torch.nn.functional.mse_loss(self.model(self.x), self.y)

    def backward(self):
        self.loss.backward()

    def optimizer(self):
        self.optimizer_.step()
        self.optimizer_.zero_grad()

    def inference(self):
        with self.torch.no_grad():
            self.model(self.x)

    def train_step(self):
        self.forward()
        self.backward()
        self.optimizer()


def loop_host_us(loop, steps=20, rounds=9, warmup=5):
    """Host microseconds per step of each phase of `loop` (a TinyLoop): the
    median over `rounds` of `steps` training steps, then `steps` inference
    forwards, queued without a host sync (one after each round, untimed)."""
    torch = loop.torch
    cuda = loop.x.device.type == "cuda"
    for _ in range(warmup):
        loop.train_step()
        loop.inference()
    if cuda:
        torch.cuda.synchronize()
    per_round = {phase: [] for phase in PHASES}
    clock = time.perf_counter
    for _ in range(rounds):
        spent = dict.fromkeys(PHASES, 0.0)
        for _ in range(steps):
            t0 = clock()
            loop.forward()
            t1 = clock()
            loop.backward()
            t2 = clock()
            loop.optimizer()
            t3 = clock()
            spent["forward"] += t1 - t0
            spent["backward"] += t2 - t1
            spent["optimizer"] += t3 - t2
        t0 = clock()
        for _ in range(steps):
            loop.inference()
        spent["inference"] = clock() - t0
        if cuda:
            torch.cuda.synchronize()
        for phase in PHASES:
            per_round[phase].append(1e6 * spent[phase] / steps)
    return {phase: median(values) for phase, values in per_round.items()}


def loop_launches(loop):
    """(launches per step of each phase, unit): CUDA kernels, copies and
    memsets from torch.profiler on a GPU; ATen operations dispatched on the
    CPU. Run it after any timing: a profiler session slows later Python."""
    torch = loop.torch
    if loop.x.device.type == "cuda":
        from torch.profiler import ProfilerActivity, profile

        def count(run):
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                run()
                torch.cuda.synchronize()
            return sum(1 for e in prof.events()
                       if e.device_type == torch.autograd.DeviceType.CUDA)
        unit = "kernels"
    else:
        from torch.utils._python_dispatch import TorchDispatchMode

        class Counter(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.n = 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.n += 1
                return func(*args, **(kwargs or {}))

        def count(run):
            with Counter() as counter:
                run()
            return counter.n
        unit = "aten ops"
    loop.train_step()
    counts = {"forward": count(loop.forward), "backward": count(loop.backward),
              "optimizer": count(loop.optimizer), "inference": count(loop.inference)}
    return counts, unit


class StateModel:
    """A mid-sized model trained between the state readings: `layers` x
    (Linear(width, width), GELU) at `batch`, MSE loss, AdamW; its kernels are
    large enough that the GPU, not the host, binds its steps."""

    def __init__(self, torch, device, layers=4, width=1024, batch=512):
        from torch import nn
        self.torch = torch
        self.description = "%d x (Linear(%d, %d), GELU), batch %d, AdamW" % (
            layers, width, width, batch)
        modules = []
        for _ in range(layers):
            modules += [nn.Linear(width, width), nn.GELU()]
        self.model = nn.Sequential(*modules).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.x = torch.randn(batch, width, device=device)
        self.cuda = self.x.device.type == "cuda"

    def train_for(self, seconds):
        """Training steps until `seconds` have passed on the host, then a sync."""
        end = time.perf_counter() + seconds
        while True:
            loss = self.model(self.x).square().mean()
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            if time.perf_counter() >= end:
                break
        if self.cuda:
            self.torch.cuda.synchronize()


def current_cpu():
    """The CPU this thread last ran on (field 39 of /proc/thread-self/stat), or
    None where /proc does not say."""
    try:
        with open("/proc/thread-self/stat") as f:
            stat = f.read()
        return int(stat[stat.rindex(")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def state_keys(samples, work, read_python, read_torchscript, description):
    """The state_* keys: `samples` times `work()` (the model's training),
    then one reading of `read_python()` and of `read_torchscript()` (None
    where TorchScript is missing), each in us per operation."""
    python, torchscript, cpus = [], [], []
    for _ in range(samples):
        work()
        cpus.append(current_cpu())
        python.append(read_python())
        if read_torchscript is not None:
            torchscript.append(read_torchscript())
    return {"state_model": description, "state_samples": samples,
            "state_python_op_us": median(python), "state_python_op_us_all": python,
            "state_torchscript_op_us": median(torchscript) if torchscript else None,
            "state_torchscript_op_us_all": torchscript, "state_cpu_all": cpus}


def loop_keys(host_us, launches, unit, description, steps):
    """The loop_* keys of the probe's JSON line from loop_host_us's and
    loop_launches's results."""
    keys = {"loop_model": description, "loop_launch_unit": unit, "loop_steps": steps}
    for phase in PHASES:
        keys["loop_%s_us" % phase] = host_us[phase]
        keys["loop_%s_launches" % phase] = launches[phase]
        keys["loop_%s_us_per_launch" % phase] = (
            host_us[phase] / launches[phase] if launches[phase] > 0 else None)
    train_launches = sum(launches[p] for p in TRAIN_PHASES)
    keys["loop_train_us_per_launch"] = (sum(host_us[p] for p in TRAIN_PHASES) / train_launches
                                        if train_launches > 0 else None)
    return keys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=20,
                        help="tiny-model steps per round of the loop_* keys")
    parser.add_argument("--state-samples", type=int, default=0,
                        help="readings of the tiny adds between a mid-sized model's training "
                             "(the state_* keys; 0: none)")
    parser.add_argument("--state-work-s", type=float, default=0.5,
                        help="seconds of the mid-sized model's training before each reading")
    args = parser.parse_args()
    if args.ops < 1 or args.rounds < 1 or args.steps < 1:
        parser.error("--ops, --rounds and --steps must be positive")
    if args.state_samples < 0 or args.state_work_s < 0:
        parser.error("--state-samples and --state-work-s must not be negative")
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no torch"
        print("no torch: %s" % e, file=sys.stderr)
        return 3
    device = torch.device(args.device)
    x = torch.zeros(1, device=device)
    cuda = device.type == "cuda"

    def per_op_us(run, rounds=args.rounds):
        run(50)
        if cuda:
            torch.cuda.synchronize()
        values = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            run(args.ops)
            values.append(1e6 * max(time.perf_counter() - t0, 1e-9) / args.ops)
            if cuda:
                torch.cuda.synchronize()
        return median(values)

    def python_adds(n):
        for _ in range(n):
            x.add_(1)

    torchscript, scripted = None, None
    try:
        def adds(x: torch.Tensor, n: int) -> torch.Tensor:
            for _ in range(n):
                x.add_(1)
            return x
        scripted = torch.jit.script(adds)
        torchscript = per_op_us(lambda n: scripted(x, n))
    except Exception as e:  # noqa: BLE001 - TorchScript is optional
        scripted = None
        print("torchscript: %s" % e, file=sys.stderr)
    python = per_op_us(python_adds)
    out = {
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "device": args.device,
        "python_op_us": python,
        "torchscript_op_us": torchscript,
        "ops": args.ops,
        "rounds": args.rounds,
    }
    # After the tiny adds, so that the keys stored since the first probe
    # keep measuring the same host state; the state readings after every
    # fresh-process key, and the launch count (a profiler session slows the
    # Python that follows it) last of all.
    loop, host_us = None, None
    try:
        loop = TinyLoop(torch, device)
        host_us = loop_host_us(loop, steps=args.steps, rounds=args.rounds)
    except Exception as e:  # noqa: BLE001 - the loop keys are an addition
        print("loop: %s" % e, file=sys.stderr)
    if args.state_samples > 0:
        state = StateModel(torch, device)
        out.update(state_keys(
            args.state_samples, lambda: state.train_for(args.state_work_s),
            lambda: per_op_us(python_adds, rounds=3),
            (lambda: per_op_us(lambda n: scripted(x, n), rounds=3))
            if scripted is not None else None, state.description))
        del state
    if host_us is not None:
        try:
            launches, unit = loop_launches(loop)
            out.update(loop_keys(host_us, launches, unit, loop.description, args.steps))
        except Exception as e:  # noqa: BLE001 - the loop keys are an addition
            print("loop: %s" % e, file=sys.stderr)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
