"""python3 tests/integration/loop_tools_test.py: the Python loop's fit tools: the probe's state terms (fit_loop_terms.py) and
the multi-GPU campaigns' node probe in the agent probe's units
(parallel_campaign.py)."""
import os
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "data", "tools"))
import fit_loop_terms  # noqa: E402
import parallel_campaign  # noqa: E402


def row(campaign, plain_op_us, agent_probe_us=None):
    return {"campaign": campaign, "plain_op_us": plain_op_us, "agent_probe_us": agent_probe_us}


class ProbeStateTermsTest(unittest.TestCase):
    def test_the_loops_readings_over_the_agents_probe_on_hosts_with_both(self):
        rows = ([row("h200-a-plain-loop.jsonl", us, 5.0) for us in (5.0, 6.0, 7.0, 8.0, 9.0)] +
                [row("h200-b-plain-loop.jsonl", us, 8.0) for us in (8.0, 9.0, 10.0)] +
                # No agent probe on this host: it does not vote.
                [row("h200-c-plain-loop.jsonl", us) for us in (20.0, 30.0)])
        t = fit_loop_terms.probe_state_terms(rows)
        # Host a: 7 / 5 = 1.4; host b: 9 / 8 = 1.125; their median.
        self.assertAlmostEqual(t["probe_state_factor"], (1.4 + 1.125) / 2)

    def test_no_host_with_both_is_no_state(self):
        t = fit_loop_terms.probe_state_terms([row("h200-c-plain-loop.jsonl", 9.0)])
        self.assertEqual(t, {"probe_state_factor": 1.0})

    def test_the_shipped_terms_carry_the_state(self):
        import json
        with open(parallel_campaign.TERMS) as f:
            terms = json.load(f)
        self.assertGreaterEqual(terms["probe_state_factor"], 1.0)


class CampaignProbeTest(unittest.TestCase):
    def test_the_campaigns_reading_in_the_agents_units(self):
        rows = [{"host_python_ops_per_s": r} for r in (1e5, 2e5, 4e5)] + [{}]
        self.assertAlmostEqual(parallel_campaign.probe_us(rows, {"probe_state_factor": 1.25}),
                               5.0 / 1.25)
        self.assertIsNone(parallel_campaign.probe_us([{}], {"probe_state_factor": 1.0}))


if __name__ == "__main__":
    unittest.main()
