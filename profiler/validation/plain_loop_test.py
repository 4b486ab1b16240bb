"""The pure parts of plain_loop.py (no torch): keys, selection, statistics."""
import os
import sqlite3
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain_loop  # noqa: E402


def config(family, batch, precision="fp32", phase="train", layers=1, ms=1.0):
    return plain_loop.Config("model/%s{layers=%d}/b%d/%s/%s/adam" % (
        family, layers, batch, precision, phase), family, {"layers": layers}, batch, precision,
        phase, "adam", ms)


class ParseKeyTest(unittest.TestCase):
    def test_parts(self):
        k = plain_loop.parse_key("model/lstm{hidden=256,layers=2}/b16/bf16-amp/train/sgd")
        self.assertEqual(k["family"], "lstm")
        self.assertEqual(k["params"], {"hidden": 256, "layers": 2})
        self.assertEqual(k["batch"], 16)
        self.assertEqual(k["precision"], "bf16-amp")
        self.assertEqual(k["phase"], "train")
        self.assertEqual(k["optimizer"], "sgd")


class SelectTest(unittest.TestCase):
    def setUp(self):
        self.configs = [config(f, b, p, ph, layers)
                        for f in ("lstm", "cnn", "dlrm")
                        for b in (16, 64, 256)
                        for p in ("fp32", "bf16-amp", "fp64")
                        for ph in ("train", "inference")
                        for layers in (1, 2, 4, 8)]

    def test_spreads_over_families_precisions_and_phases(self):
        picked = plain_loop.select_configs(self.configs, 30)
        self.assertEqual(len(picked), 30)
        self.assertEqual({c.family for c in picked}, {"lstm", "cnn", "dlrm"})
        self.assertEqual({c.precision for c in picked}, {"fp32", "bf16-amp"})  # no fp64
        self.assertEqual({c.phase for c in picked}, {"train", "inference"})
        self.assertEqual(len({c.key for c in picked}), 30)
        # Both ends of each group: the smallest and the largest batch appear.
        self.assertIn(16, {c.batch for c in picked})
        self.assertIn(256, {c.batch for c in picked})

    def test_is_deterministic_and_filters(self):
        a = plain_loop.select_configs(self.configs, 12, families={"cnn"})
        b = plain_loop.select_configs(list(reversed(self.configs)), 12, families={"cnn"})
        self.assertEqual([c.key for c in a], [c.key for c in b])
        self.assertEqual({c.family for c in a}, {"cnn"})

    def test_fewer_available_than_asked(self):
        self.assertEqual(len(plain_loop.select_configs(self.configs[:5], 30)), 5)


class CompareTest(unittest.TestCase):
    def test_statistics(self):
        s = plain_loop.compare([(1.01, 1.0), (0.98, 1.0), (1.0, 1.0), (2.0, 1.0)])
        self.assertEqual(s["n"], 4)
        self.assertAlmostEqual(s["median_abs_pct"], 1.5)
        self.assertAlmostEqual(s["median_pct"], 0.5)
        self.assertGreater(s["p90_abs_pct"], 50)

    def test_ignores_non_positive_times(self):
        self.assertEqual(plain_loop.compare([(0, 1.0), (1.0, 0)])["n"], 0)

    def test_host_matched_keeps_rows_whose_probe_ratio_is_typical(self):
        # Probe ratios 2.0, 2.04, 1.6 (host 20% slower), 2.0; one row unprobed.
        rows = [(1.0, 1.1, 100.0, 200.0), (2.0, 2.0, 100.0, 204.0),
                (3.0, 4.0, 100.0, 160.0), (4.0, 4.0, 50.0, 100.0), (5.0, 5.0, None, 100.0)]
        self.assertEqual(plain_loop.host_matched(rows), [(1.0, 1.1), (2.0, 2.0), (4.0, 4.0)])
        self.assertEqual(len(plain_loop.host_matched(rows, tolerance=0.3)), 4)
        self.assertEqual(plain_loop.host_matched([(1.0, 1.0, None, None)]), [])

    def test_self_agreement_compares_the_first_two_rounds(self):
        # 1.1 vs 1.0 (10%), 2.0 vs 2.0 (0%), 4.0 vs 5.0 (20%) and 3.0 vs 2.0
        # in rounds 2 and 3 (not compared); one configuration timed once.
        s = plain_loop.self_agreement([[1.1, 1.0], [2.0, 2.0, 9.0], [4.0, 5.0], [3.0]])
        self.assertEqual(s["n"], 3)
        self.assertAlmostEqual(s["median_abs_pct"], 10.0)
        self.assertAlmostEqual(s["median_pct"], 0.0)
        self.assertEqual(plain_loop.self_agreement([[1.0], [2.0]])["n"], 0)


class ReadStoreTest(unittest.TestCase):
    def test_reads_the_newest_method_median_per_key(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.sqlite")
            db = sqlite3.connect(path)
            db.execute("CREATE TABLE workloads (id INTEGER PRIMARY KEY, key TEXT, kind TEXT)")
            db.execute("CREATE TABLE profiles (workload_id INTEGER, median_ms REAL, "
                       "method_version INTEGER, dispatch_ops_per_s REAL)")
            db.execute("INSERT INTO workloads VALUES (1, 'model/cnn{layers=1}/b16/fp32/train/adam',"
                       " 'model'), (2, 'op/gemm{m=1}/b1/fp32/inference/-', 'operation')")
            db.executemany("INSERT INTO profiles VALUES (?, ?, ?, ?)",
                           [(1, 1.0, 2, 1e5), (1, 3.0, 2, 3e5), (1, 100.0, 1, 9e5),
                            (2, 5.0, 2, None)])
            db.commit()
            db.close()
            configs = plain_loop.read_agent_configs(path)
        self.assertEqual(len(configs), 1)
        self.assertEqual(configs[0].family, "cnn")
        self.assertAlmostEqual(configs[0].agent_ms, 2.0)
        self.assertAlmostEqual(configs[0].agent_dispatch, 2e5)


if __name__ == "__main__":
    unittest.main()
