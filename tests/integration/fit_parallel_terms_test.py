#!/usr/bin/env python3
"""data/tools/fit_parallel_terms.py on synthetic points: what each term is learned from.

DDP's GPU term must be learned as a share of the gradient all-reduce's time,
which a scale on the compute cannot stand in for: two models of the same
compute and different gradients.

Usage: fit_parallel_terms_test.py SOURCE_DIR
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(sys.argv.pop(1) if len(sys.argv) > 1 else ".", "data", "tools"))
import fit_parallel_terms  # noqa: E402


def point(model, strategy, measured, composed, dp_comm=0.0, memory_ratio=1.0, campaign=0):
    return {"model": model, "strategy": strategy, "framework": "pytorch",
            "checkpointing": False, "measured": measured, "composed": composed,
            "low": 0.9, "high": 1.1, "launches": 100.0, "units": 8.0, "loop_ms": 0.01,
            "dispatch": 1.0, "collectives": 0.0, "dp_comm": dp_comm,
            "memory_measured": 10.0 * memory_ratio, "memory_predicted": 10.0,
            "campaign": campaign}


class DataParallelContentionTest(unittest.TestCase):
    def test_the_gpu_term_is_a_share_of_the_all_reduce(self):
        # A decoder with many gradients and a CNN with few, the same compute:
        # each slowed by half its all-reduce.
        pts = []
        for composed in (100.0, 200.0, 400.0):
            pts.append(point("decoder", "ddp", composed + 0.5 * 40, composed, dp_comm=40))
            pts.append(point("cnn", "ddp", composed + 0.5 * 1, composed, dp_comm=1))
        term = fit_parallel_terms.fit_terms(pts)[("pytorch", "ddp")]
        self.assertEqual(term["gpu_scale"], 0)
        self.assertAlmostEqual(term["dp_comm_contention"], 0.5)
        for p in pts:
            self.assertAlmostEqual(fit_parallel_terms.predict(term, p), p["measured"])


if __name__ == "__main__":
    unittest.main()
