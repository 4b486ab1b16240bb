"""The pure parts of parallel_loop.py and plain_loop_campaign.py (no torch)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parallel_loop  # noqa: E402
import plain_loop_campaign  # noqa: E402


class DescribeTest(unittest.TestCase):
    def test_decoder_parameters_match_the_public_checkpoints(self):
        # Llama-3.2-1B, Llama-3.2-3B (tied heads) and Llama-3-8B (untied).
        counts = {m: parallel_loop.decoder_parameters(dict(parallel_loop.LLAMA[m], seq_len=2048))
                  for m in ("llama-1b", "llama-3b", "llama-8b")}
        self.assertEqual(counts, {"llama-1b": 1235814400, "llama-3b": 3212749824,
                                  "llama-8b": 8030261248})

    def test_pipeline_stages_untie_the_head(self):
        tied = parallel_loop.describe("llama-1b", 2048)
        split = parallel_loop.describe("llama-1b", 2048, pp=2)
        self.assertEqual(tied["params"]["tied"], 1)
        self.assertEqual(split["params"]["tied"], 0)
        self.assertEqual(split["parameters"] - tied["parameters"], 128256 * 2048)

    def test_descriptions_use_perfcasts_families(self):
        d = parallel_loop.describe("gpt2-medium", 1024)
        self.assertEqual(d["family"], "decoder")
        self.assertEqual(d["params"]["seq_len"], 1024)
        self.assertTrue(d["hf_config"].endswith("gpt2-medium.json"))
        self.assertEqual(parallel_loop.describe("bert-large", 512)["family"], "bert")
        self.assertEqual(parallel_loop.describe("resnet50")["family"], "resnet_imagenet")
        self.assertEqual(parallel_loop.describe("vit-b16")["params"]["patch"], 16)
        with self.assertRaises(ValueError):
            parallel_loop.describe("nope")

    def test_workload_key(self):
        d = parallel_loop.describe("resnet50")
        self.assertEqual(parallel_loop.workload_key(d, 256),
                         "model/resnet_imagenet{classes=1000,depth=50,image=224}/b256/"
                         "bf16-amp/train/adamw")


class PlanTest(unittest.TestCase):
    def test_plans_have_unique_ids_and_consistent_layouts(self):
        for name in ("smoke", "h200x2", "h200x2-sizes", "h200x2-host", "h200x2-spread"):
            rows = parallel_loop.plan(name, 2)
            self.assertEqual(len({r["id"] for r in rows}), len(rows))
            for r in rows:
                self.assertEqual(r["dp"] * r["tp"] * r["pp"], r["gpus"], r["id"])
                self.assertEqual(r["global_batch"] % r["dp"], 0, r["id"])
                if r["strategy"] in ("tp", "pp"):
                    self.assertIn(r["model"], parallel_loop.LLAMA, r["id"])
                if r["strategy"] == "pp":
                    self.assertEqual(r["global_batch"] % r["micro_batches"], 0, r["id"])
                    self.assertGreaterEqual(r["micro_batches"], r["pp"], r["id"])
                if r["strategy"] == "fsdp":
                    self.assertIn(r["zero"], (2, 3), r["id"])
                else:
                    self.assertEqual(r["zero"], 0, r["id"])

    def test_every_strategy_appears_at_one_and_two_gpus(self):
        rows = parallel_loop.plan("h200x2", 2)
        strategies = {(r["strategy"], r["zero"], r["activation_checkpointing"]) for r in rows}
        for s in (("single", 0, False), ("ddp", 0, False), ("fsdp", 3, False),
                  ("fsdp", 2, False), ("ddp", 0, True), ("fsdp", 3, True), ("tp", 0, False),
                  ("pp", 0, False)):
            self.assertIn(s, strategies)
        self.assertEqual({r["gpus"] for r in rows}, {1, 2})

    def test_sizes_plan_holds_out_every_h200x2_configuration(self):
        seen = {r["id"] for r in parallel_loop.plan("h200x2", 2)}
        sizes = parallel_loop.plan("h200x2-sizes", 2)
        self.assertFalse(seen & {r["id"] for r in sizes})
        self.assertEqual({r["strategy"] for r in sizes}, {"single", "ddp", "fsdp", "tp", "pp"})

    def test_host_plan_is_new_and_pairs_each_ddp_row_with_its_per_gpu_single(self):
        seen = {r["id"] for name in ("h200x2", "h200x2-sizes")
                for r in parallel_loop.plan(name, 2)}
        rows = parallel_loop.plan("h200x2-host", 2)
        self.assertFalse(seen & {r["id"] for r in rows})
        self.assert_pairs_each_ddp_row_with_its_singles(rows)

    def assert_pairs_each_ddp_row_with_its_singles(self, rows):
        """Each DDP row has its one-GPU steps at the per-GPU and the global batch."""
        singles = {(r["model"], r["global_batch"], r["seq_len"]) for r in rows
                   if r["strategy"] == "single"}
        for r in rows:
            if r["strategy"] == "ddp":
                self.assertIn((r["model"], r["global_batch"] // 2, r["seq_len"]), singles)
                self.assertIn((r["model"], r["global_batch"], r["seq_len"]), singles)
        return singles

    def test_spread_plan_measures_only_new_configurations(self):
        def shape(r):
            return (r["model"], r["strategy"], r["global_batch"], r["seq_len"], r["zero"],
                    r["activation_checkpointing"], r["micro_batches"], r["fsdp_params"])
        seen = {shape(r) for name in ("h200x2", "h200x2-sizes", "h200x2-host")
                for r in parallel_loop.plan(name, 2)}
        rows = parallel_loop.plan("h200x2-spread", 2)
        self.assertFalse(seen & {shape(r) for r in rows if r["strategy"] != "single"})
        self.assertGreaterEqual(sum(r["strategy"] == "tp" for r in rows), 12)
        singles = self.assert_pairs_each_ddp_row_with_its_singles(rows)
        for r in rows:
            if r["strategy"] == "tp" and r["model"] != "llama-8b":
                self.assertIn((r["model"], r["global_batch"], r["seq_len"]), singles)

    def test_unknown_plan(self):
        with self.assertRaises(ValueError):
            parallel_loop.plan("x9")


class CollectivesTest(unittest.TestCase):
    def test_bus_bandwidth_follows_nccl_tests(self):
        # 1 GiB all-reduce over 2 GPUs in 3.29 ms: algbw 326 GB/s, busbw the same (factor 1).
        algbw, busbw = parallel_loop.bandwidths("all_reduce", 1 << 30, 3.29e-3, 2)
        self.assertAlmostEqual(algbw, 326.4, delta=0.1)
        self.assertAlmostEqual(busbw, algbw)
        self.assertAlmostEqual(parallel_loop.bus_factor("all_reduce", 8), 1.75)
        self.assertAlmostEqual(parallel_loop.bus_factor("all_gather", 2), 0.5)
        self.assertAlmostEqual(parallel_loop.bus_factor("reduce_scatter", 4), 0.75)
        with self.assertRaises(ValueError):
            parallel_loop.bus_factor("broadcast", 2)

    def test_sizes_double_from_4k_to_1g(self):
        sizes = parallel_loop.message_sizes()
        self.assertEqual((sizes[0], sizes[-1], len(sizes)), (4096, 1 << 30, 19))
        self.assertEqual(parallel_loop._size("64M"), 64 << 20)


class SummaryTest(unittest.TestCase):
    def test_one_row_per_id_with_the_largest_rank(self):
        d = parallel_loop.describe("llama-1b", 2048)
        base = {"kind": "parallel_step", "id": "a", "model_description": d, "gpus": 2,
                "peak_allocated_gib": [10.0, 12.0], "peak_reserved_gib": [11.0, None],
                "nvml_used_gib": [None, None], "power_w": [400.0, 500.0], "step_ms": 9.0,
                "host_probe": {"python_ops_per_s": 1e5}, "host": {"cpu_model": "x"},
                "energy_j_per_step_total": 8.1}
        rows = [dict(base, step_ms=8.0), base, dict(base, id="b", oom=True, step_ms=None,
                                                   power_w=[None, None]),
                {"kind": "collective"}]
        s = {r["id"]: r for r in parallel_loop.summarize(rows)}
        self.assertEqual(set(s), {"a", "b"})
        self.assertEqual(s["a"]["step_ms"], 9.0)  # the newest row of an id
        self.assertEqual(s["a"]["peak_allocated_gib"], 12.0)
        self.assertEqual(s["a"]["peak_reserved_gib"], 11.0)
        self.assertIsNone(s["a"]["nvml_used_gib"])
        self.assertEqual(s["a"]["power_w_per_gpu"], 450.0)
        self.assertEqual(s["a"]["energy_j_per_step"], 8.1)
        self.assertEqual(s["a"]["family"], "decoder")
        self.assertEqual(s["a"]["host_python_ops_per_s"], 1e5)
        self.assertTrue(s["b"]["oom"])
        self.assertIsNone(s["b"]["power_w_per_gpu"])

    def test_median(self):
        self.assertEqual(parallel_loop.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(parallel_loop.median([4.0, 1.0]), 2.5)


class CampaignTest(unittest.TestCase):
    def test_keys(self):
        k = plain_loop_campaign.key("lstm", {"layers": 2, "hidden": 256}, 64, "strict-fp32",
                                    "inference", "adam")
        self.assertEqual(k, "model/lstm{hidden=256,layers=2}/b64/strict-fp32/inference/-")

    def test_configurations_and_rounds(self):
        configs = plain_loop_campaign.configurations(plain_loop_campaign.MODELS)
        self.assertEqual(len(configs), len(plain_loop_campaign.MODELS) * 4 * 2)
        self.assertEqual(plain_loop_campaign.round_order(configs, 1)[0], configs[-1])
        self.assertEqual(plain_loop_campaign.round_order(configs, 2), configs)
        names = [m[0] for m in plain_loop_campaign.MODELS]
        self.assertEqual(len(set(names)), len(names))

    def test_precision_flags(self):
        self.assertEqual(plain_loop_campaign.FLAGS["fp32"], ("fp32", False, True))
        self.assertEqual(plain_loop_campaign.FLAGS["strict-fp32"], ("fp32", False, False))
        self.assertEqual(plain_loop_campaign.FLAGS["tf32"], ("fp32", True, True))

    def test_noise(self):
        rows = [{"kind": "plain_loop", "key": "a", "round": 1, "step_ms": 10.0},
                {"kind": "plain_loop", "key": "a", "round": 2, "step_ms": 11.0},
                {"kind": "plain_loop", "key": "b", "round": 1, "step_ms": 4.0},
                {"kind": "plain_loop", "key": "b", "round": 2, "step_ms": 4.0},
                {"kind": "plain_loop", "key": "c", "round": 1, "step_ms": 4.0}]
        s = plain_loop_campaign.noise(rows)
        self.assertEqual(s["n"], 2)
        self.assertAlmostEqual(s["median_pct"], 5.0)


if __name__ == "__main__":
    unittest.main()
