"""profiler/python_probe.py's loop keys: their arithmetic without torch, and
the tiny model's loop on the CPU where torch exists."""
import json
import os
import subprocess
import sys
import unittest

PROFILER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROFILER)
import python_probe  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


class LoopKeysTest(unittest.TestCase):
    def test_per_launch_is_host_time_over_launches(self):
        keys = python_probe.loop_keys(
            {"forward": 190.0, "backward": 400.0, "optimizer": 120.0, "inference": 150.0},
            {"forward": 19, "backward": 40, "optimizer": 12, "inference": 17}, "kernels",
            "tiny", 20)
        self.assertAlmostEqual(keys["loop_forward_us_per_launch"], 10.0)
        self.assertAlmostEqual(keys["loop_backward_us_per_launch"], 10.0)
        self.assertAlmostEqual(keys["loop_optimizer_us_per_launch"], 10.0)
        self.assertAlmostEqual(keys["loop_inference_us_per_launch"], 150.0 / 17)
        # The training step's: all of its host time over all of its launches.
        self.assertAlmostEqual(keys["loop_train_us_per_launch"], 710.0 / 71)
        self.assertEqual(keys["loop_backward_launches"], 40)
        self.assertEqual(keys["loop_launch_unit"], "kernels")

    def test_no_launches_counted_is_null_not_a_division_by_zero(self):
        keys = python_probe.loop_keys(
            dict.fromkeys(python_probe.PHASES, 100.0), dict.fromkeys(python_probe.PHASES, 0),
            None, "tiny", 20)
        for phase in python_probe.PHASES + ("train",):
            self.assertIsNone(keys["loop_%s_us_per_launch" % phase])
        self.assertEqual(keys["loop_forward_us"], 100.0)

    def test_median(self):
        self.assertEqual(python_probe.median([3, 1, 2]), 2)
        self.assertEqual(python_probe.median([4, 1, 3, 2]), 2.5)


class StateKeysTest(unittest.TestCase):
    def test_each_reading_follows_the_models_work(self):
        calls = []
        readings = iter([7.0, 10.0, 7.5])
        keys = python_probe.state_keys(
            3, lambda: calls.append("work"),
            lambda: calls.append("python") or next(readings),
            lambda: calls.append("torchscript") or 5.0, "mid")
        self.assertEqual(calls, ["work", "python", "torchscript"] * 3)
        self.assertEqual(keys["state_python_op_us_all"], [7.0, 10.0, 7.5])
        self.assertEqual(keys["state_python_op_us"], 7.5)
        self.assertEqual(keys["state_torchscript_op_us"], 5.0)
        self.assertEqual(len(keys["state_cpu_all"]), 3)
        self.assertEqual(keys["state_samples"], 3)

    def test_without_torchscript_its_key_is_null(self):
        keys = python_probe.state_keys(2, lambda: None, lambda: 8.0, None, "mid")
        self.assertIsNone(keys["state_torchscript_op_us"])
        self.assertEqual(keys["state_torchscript_op_us_all"], [])
        self.assertEqual(keys["state_python_op_us"], 8.0)

    @unittest.skipUnless(os.path.exists("/proc/thread-self/stat"), "no /proc")
    def test_current_cpu_is_one_of_this_machines(self):
        cpu = python_probe.current_cpu()
        self.assertIsNotNone(cpu)
        self.assertGreaterEqual(cpu, 0)
        self.assertLess(cpu, os.cpu_count() * 64)


@unittest.skipUnless(torch is not None, "no torch for this python")
class TinyLoopTest(unittest.TestCase):
    def test_phases_are_timed_and_counted_on_the_cpu(self):
        loop = python_probe.TinyLoop(torch, torch.device("cpu"), layers=2, width=8)
        host_us = python_probe.loop_host_us(loop, steps=3, rounds=3, warmup=1)
        self.assertEqual(set(host_us), set(python_probe.PHASES))
        self.assertTrue(all(v > 0 for v in host_us.values()), host_us)
        launches, unit = python_probe.loop_launches(loop)
        self.assertEqual(unit, "aten ops")
        # Three linears and two ReLUs at least; training adds the loss.
        self.assertGreaterEqual(launches["inference"], 5)
        self.assertGreater(launches["forward"], launches["inference"])
        self.assertGreater(launches["backward"], 0)
        self.assertGreater(launches["optimizer"], 0)

    def test_the_script_prints_the_loop_keys_beside_the_old_ones(self):
        done = subprocess.run([sys.executable, os.path.join(PROFILER, "python_probe.py"),
                               "--device", "cpu", "--ops", "50", "--rounds", "3",
                               "--steps", "3"], capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        out = json.loads(done.stdout.strip().splitlines()[-1])
        self.assertGreater(out["python_op_us"], 0)
        for phase in python_probe.PHASES + ("train",):
            self.assertGreater(out["loop_%s_us_per_launch" % phase], 0)

    def test_the_state_readings_come_only_when_asked(self):
        def run(*extra):
            done = subprocess.run([sys.executable, os.path.join(PROFILER, "python_probe.py"),
                                   "--device", "cpu", "--ops", "50", "--rounds", "3",
                                   "--steps", "3"] + list(extra),
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            return json.loads(done.stdout.strip().splitlines()[-1])
        self.assertNotIn("state_python_op_us", run())
        out = run("--state-samples", "2", "--state-work-s", "0")
        self.assertEqual(len(out["state_python_op_us_all"]), 2)
        self.assertGreater(out["state_python_op_us"], 0)
        self.assertGreater(out["loop_train_us_per_launch"], 0)

    def test_the_plain_loop_divides_by_the_probes_counts(self):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import plain_loop
        counts = {"loop_forward_launches": 10, "loop_backward_launches": 20,
                  "loop_optimizer_launches": 40, "loop_inference_launches": 5,
                  "loop_launch_unit": "aten ops"}
        keys = plain_loop.LoopProbe(torch.device("cpu"), counts).measure(steps=2, rounds=1)
        self.assertAlmostEqual(keys["loop_forward_us_per_launch"], keys["loop_forward_us"] / 10)
        self.assertAlmostEqual(keys["loop_optimizer_us_per_launch"],
                               keys["loop_optimizer_us"] / 40)
        self.assertAlmostEqual(keys["loop_train_us_per_launch"], sum(
            keys["loop_%s_us" % p] for p in ("forward", "backward", "optimizer")) / 70)


if __name__ == "__main__":
    unittest.main()
