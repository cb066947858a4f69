#!/usr/bin/env python3
"""Unit tests of tools/fault_campaign's drawing and scoring (no job is run).

Usage: fault_campaign_test.py FAULT_CAMPAIGN
"""

import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import unittest

fc = None  # the tool, loaded as a module by main()


def load(path):
    loader = importlib.machinery.SourceFileLoader("fault_campaign", path)
    spec = importlib.util.spec_from_loader("fault_campaign", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class DrawTest(unittest.TestCase):
    def test_a_seed_and_index_always_draw_the_same_run(self):
        self.assertEqual(fc.draw(7, 3, fc.KINDS), fc.draw(7, 3, fc.KINDS))
        self.assertNotEqual([fc.draw(7, i, fc.KINDS) for i in range(10)],
                            [fc.draw(8, i, fc.KINDS) for i in range(10)])

    def test_draws_respect_the_campaign_bounds(self):
        runs = [fc.draw(1, i, fc.KINDS) for i in range(3000)]
        self.assertEqual({r["kind"] for r in runs}, set(fc.KINDS))
        for r in runs:
            self.assertTrue(4 <= r["world"] <= 16, r)
            self.assertEqual(r["world"], r["tp"] * r["pp"] * r["dp"])
            self.assertIn(r["nodes"], range(1, 5))
            self.assertEqual(r["world"] % r["nodes"], 0, r)
            self.assertIn(r["rank"], range(r["world"]))
            self.assertTrue(1 <= r["step"] <= 60, r)
            self.assertTrue(max(1.2, 1 + 0.06 * r["pp"]) - 0.005 <= r["factor"] <= 2.0, r)
            self.assertTrue(fc.fits(r["kind"], r), r)
            if r["kind"] == "hang_send":
                self.assertGreaterEqual(r["pp"], 2)
            if r["kind"].startswith("mismatch"):
                self.assertGreaterEqual(r["tp"] * r["dp"], 4)
            if r["kind"] == "slow_link":
                self.assertTrue(fc.cross_node_groups(r, r["rank"]), r)
        early = sum(r["step"] <= 10 for r in runs) / len(runs)
        self.assertTrue(0.45 <= early <= 0.55, early)  # half in steps 1-10
        loaded = sum(r["load"] for r in runs) / len(runs)
        self.assertTrue(0.45 <= loaded <= 0.55, loaded)
        self.assertEqual({r["nodes"] for r in runs}, {1, 2, 3, 4})

    def test_a_slow_link_without_a_twin_degrades_after_its_baseline(self):
        # Seed 1 runs 42 and 134: tp1-pp4-dp1 on 2 nodes, rank 0's one pipeline communicator
        # has no twin to be compared with; run 9: tp1-pp4-dp4, four pipeline communicators.
        lone = {"tp": 1, "pp": 4, "dp": 1, "world": 4, "nodes": 2}
        self.assertFalse(fc.has_comparator(lone, 0))
        self.assertTrue(fc.has_comparator({"tp": 1, "pp": 4, "dp": 4, "world": 16, "nodes": 2},
                                          15))
        runs = [fc.draw(1, i, ["slow_link"]) for i in range(300)]
        for r in runs:
            if not fc.has_comparator(r, r["rank"]):
                self.assertTrue(fc.LINK_LATE_STEP <= r["step"] <= 60, r)
        self.assertTrue(any(not fc.has_comparator(r, r["rank"]) for r in runs))
        spec = dict(lone, kind="slow_link", rank=0, step=40, factor=1.5)
        _, env, _, _ = fc.fault_setup(spec)
        r, factor, onset = env["XTIMER_SIM_SLOW_NIC"].split(":")
        self.assertEqual((r, factor), ("0", str(fc.LINK_FACTOR)))
        self.assertEqual(float(onset), spec["onset"])

    def test_kinds_limit_the_draw(self):
        self.assertEqual({fc.draw(1, i, ["stuck"])["kind"] for i in range(20)}, {"stuck"})

    def test_groups_follow_megatron_order(self):
        topo = {"tp": 2, "pp": 2, "dp": 2, "world": 8, "nodes": 2}
        self.assertEqual(fc.members(topo, 5), {"tp": [4, 5], "pp": [1, 5], "dp": [5, 7],
                                               "tpdp": [4, 5, 6, 7]})
        # Ranks 0-3 on node 0, 4-7 on node 1: only the pipeline groups cross.
        self.assertEqual(fc.cross_node_groups(topo, 5), ["pp"])


class ScrapeSettingTest(unittest.TestCase):
    def config(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
        self.addCleanup(os.unlink, f.name)
        f.write(text)
        f.close()
        return f.name

    def test_the_default_is_the_shipped_xtimer_job_not_the_global_setting(self):
        path = self.config("global:\n  scrape_interval: 15s\n  scrape_timeout: 10s\n"
                           "scrape_configs:\n  - job_name: xtimer\n    honor_labels: true\n"
                           "    scrape_interval: 5s\n    scrape_timeout: 4s\n")
        self.assertEqual(fc.shipped_scrape_setting(path), ("5s", "4s"))
        args = fc.parse_args(["--seed", "1", "--runs", "1", "--out", "x"])
        self.assertEqual(args.scrape, fc.shipped_scrape_setting())
        self.assertEqual(fc.parse_args(["--seed", "1", "--runs", "1", "--out", "x",
                                        "--scrape", "1,1"]).scrape, ("1s", "1s"))

    def test_a_config_without_the_xtimer_job_or_a_valid_setting_is_refused(self):
        for text in ("global:\n  scrape_interval: 15s\n  scrape_timeout: 10s\n",
                     "- job_name: xtimer\n    scrape_interval: 4s\n    scrape_timeout: 5s\n"):
            with self.assertRaises(SystemExit) as e:
                fc.shipped_scrape_setting(self.config(text))
            self.assertIn("fault_campaign: ", str(e.exception.code))


class ScoreTest(unittest.TestCase):
    def test_headline_is_the_most_severe_and_names_the_exit_cause(self):
        seen = fc.hang_seen([
            {"kind": "never_issued", "culprit_ranks": [2], "evidence": []},
            {"kind": "exited", "culprit_ranks": [3],
             "evidence": ["rank 3 exited: signal 11 (SIGSEGV) 12.0 s ago"]},
            {"kind": "exited", "culprit_ranks": [1], "evidence": []}])
        self.assertEqual((seen["kind"], seen["culprits"], seen["cause"]),
                         ("exited", [1, 3], "SIGSEGV"))
        self.assertEqual(fc.exit_cause(["rank 2 exited: exit status 1"]), "exit status 1")
        self.assertEqual(fc.exit_cause(["connection to the daemon lost"]), "connection lost")

    def test_exit_cause_is_the_headline_evidence_not_a_victims(self):
        # Campaign seed 1 run 15: rank 3 SIGKILLed (the daemon knows "connection lost"), its
        # victims exited 1; the verdict's first evidence is the first failure's.
        seen = fc.hang_seen([{"kind": "exited", "culprit_ranks": [3], "evidence": [
            "rank 3 exited: connection to the daemon lost 4.0 s ago",
            "rank 2 exited: exit status 1 3.5 s ago (after rank 3)"]}])
        self.assertEqual((seen["culprits"], seen["cause"]), ([3], "connection lost"))

    def test_surface_is_right_once_culprit_kind_and_cause_are(self):
        want = fc.expected({"kind": "mismatch_root", "rank": 5})
        s = fc.Surface("live", want, True)
        s.observe({"kind": "stuck_in_collective", "culprits": [], "cause": None}, 10)
        s.observe({"kind": "mismatch", "culprits": [5], "cause": "count"}, 11)
        s.observe({"kind": "mismatch", "culprits": [5], "cause": "root",
                   "metric_culprits": [4]}, 12)  # the metric disagrees
        self.assertIsNone(s.right_s)
        s.observe({"kind": "mismatch", "culprits": [5], "cause": "root",
                   "metric_culprits": [5]}, 13.04)
        r = s.record()
        self.assertEqual((r["first_s"], r["time_s"], r["culprit_right"], r["kind_right"]),
                         (10, 13.0, True, True))
        self.assertEqual(r["first"]["kind"], "stuck_in_collective")

    def test_live_accepts_waiting_on_remote_only_where_no_node_can_judge(self):
        def spec(kind, tp, pp, dp, nodes, rank):
            return {"kind": kind, "tp": tp, "pp": pp, "dp": dp, "world": tp * pp * dp,
                    "nodes": nodes, "rank": rank}
        # 2922/0: the loss group [0 1 2 3] on 4 nodes; 2922/7: [0 1] on 2 of 4 nodes; 201/1: the
        # hung rank 1 alone on its node with every peer elsewhere.
        apart = [spec("mismatch_op", 2, 1, 2, 4, 1), spec("stuck", 1, 2, 2, 4, 0),
                 spec("hang_collective", 1, 4, 1, 4, 1)]
        # 2922/1: one node; 2922/2: rank 1's tensor peer 0 on its node; a crash: the daemon
        # names an exit with nobody waiting.
        together = [spec("mismatch_root", 2, 4, 2, 1, 15), spec("hang_send", 2, 2, 1, 2, 1),
                    spec("crash_segv", 1, 4, 1, 4, 1)]
        for sp in apart:
            self.assertFalse(fc.judged_on_one_node(sp), sp)
            self.assertEqual(fc.accepted(sp, "live"), [fc.expected(sp), fc.WAITING_ON_REMOTE])
            self.assertEqual(fc.accepted(sp, "rules"), [fc.expected(sp)])
        for sp in together:
            self.assertTrue(fc.judged_on_one_node(sp), sp)
            self.assertEqual(fc.accepted(sp, "live"), [fc.expected(sp)])
        sp = apart[0]
        wor = {"kind": "waiting_on_remote", "culprits": [], "cause": None, "metric_culprits": []}
        live = fc.Surface("live", fc.expected(sp), True, fc.accepted(sp, "live")[1:])
        live.observe(wor, 11)
        self.assertEqual((live.right_s, live.record()["kind_right"]), (11, True))
        live.observe({"kind": "mismatch", "culprits": [1], "cause": "op"}, 12)
        self.assertTrue(live.record()["culprit_right"])  # the full verdict is right too
        live.observe({"kind": "stuck_in_collective", "culprits": [], "cause": None}, 13)
        self.assertFalse(live.record()["kind_right"])  # a guess from part of the group is not
        rules = fc.Surface("rules", fc.expected(sp), True, fc.accepted(sp, "rules")[1:])
        rules.observe(wor, 11)
        self.assertIsNone(rules.right_s)

    def test_first_failure_over_every_nodes_ranks(self):
        # 2922/6: node 1 sees rank 5's SIGSEGV at 100.0; node 0 sees ranks 1 and 3 exit 1 on
        # the remote error (one of them a moment before rank 5's daemon noticed its crash).
        node0 = {"now": 110.0, "ranks": [
            {"rank": 1, "exited": True, "exit_cause": "exit", "exit_code": 1, "exited_age_s": 10.3},
            {"rank": 3, "exited": True, "exit_cause": "exit", "exit_code": 1, "exited_age_s": 9.5},
            {"rank": 0, "exited": False}]}
        node1 = {"now": 111.0, "ranks": [
            {"rank": 5, "exited": True, "exit_cause": "signal", "exit_code": 11,
             "exited_age_s": 11.0},
            {"rank": 4, "exited": True, "exit_cause": "exit", "exit_code": 0, "exited_age_s": 1}]}
        self.assertEqual(fc.first_failure([node0, node1]), 5)
        node1["ranks"][0]["exited_age_s"] = 9.0  # 2.3 s after rank 1: too late to head
        self.assertEqual(fc.first_failure([node0, node1]), 1)
        self.assertIsNone(fc.first_failure([{"now": 1.0, "ranks": [node1["ranks"][1]]}]))

    def test_sigkill_may_read_as_a_lost_connection(self):
        s = fc.Surface("rules", fc.expected({"kind": "crash_kill", "rank": 0}), True)
        s.observe({"kind": "exited", "culprits": [0], "cause": "connection lost"}, 3)
        self.assertEqual(s.right_s, 3)

    def record(self, kind, step=20, **surface):
        spec = fc.draw(1, 0, [kind])
        spec.update(step=step, status="ok", expected=fc.expected(spec))
        spec["deadline_s"] = None if kind == "healthy" else fc.deadline_s(spec)
        spec["surfaces"] = {}
        for name in fc.SURFACES:
            s = fc.Surface(name, spec["expected"], True)
            for seen, t in surface.get(name, []):
                s.observe(seen, t)
            spec["surfaces"][name] = s.record()
        return spec

    def test_misses(self):
        right = {"kind": "never_issued", "culprits": None, "cause": None}
        rec = self.record("hang_collective")
        right["culprits"] = [rec["rank"]]
        on_time = {n: [(right, 12)] for n in fc.SURFACES}
        self.assertEqual(fc.misses(self.record("hang_collective", **on_time)), [])
        late = dict(on_time, hosts=[(right, 45)])
        self.assertEqual(len(fc.misses(self.record("hang_collective", **late))), 1)
        self.assertEqual(fc.misses(self.record("hang_collective", step=4, **late)), [])
        silent = dict(on_time, rules=[])
        self.assertEqual(len(fc.misses(self.record("hang_collective", **silent))), 1)
        alarm = {"kind": "straggler", "culprits": [1], "cause": "compute"}
        healthy = self.record("healthy", offline=[(alarm, 80)])
        self.assertEqual(len(fc.misses(healthy)), 1)
        self.assertTrue(healthy["surfaces"]["offline"]["false_alarm"])
        self.assertEqual(fc.misses(self.record("healthy")), [])
        broken = dict(self.record("stuck"), status="setup_error", error="ranks not registered")
        self.assertEqual(len(fc.misses(broken)), 1)
        self.assertIn("(not run to the end: setup_error)", fc.table([broken]))

    def test_an_answer_after_an_error_is_an_answer(self):
        # A healthy run's hosts surface erred once, before the live diagnosis had seen the
        # ranks (seed 2922 run 4 under load): not a miss once a later probe answered.
        s = fc.Surface("hosts", None, True)

        def no_rank_yet():
            raise fc.Failure("xtimer analyze: no rank of job 'h' on the 4 node(s) that answered")
        s.probe(no_rank_yet, 0.4)
        rec = self.record("healthy")
        rec["surfaces"]["hosts"] = s.record()
        self.assertEqual(len(fc.misses(rec)), 1)
        s.probe(lambda: None, 1.4)  # answered: no verdict, as a healthy run should
        rec["surfaces"]["hosts"] = s.record()
        self.assertEqual(fc.misses(rec), [])

    def test_table_counts_per_kind_and_surface(self):
        rec = self.record("hang_collective")
        right = {"kind": "never_issued", "culprits": [rec["rank"]], "cause": None}
        wrong = {"kind": "stuck_in_collective", "culprits": [], "cause": None}
        recs = [self.record("hang_collective", live=[(right, t)]) for t in (10, 20, 12)]
        recs.append(self.record("hang_collective", live=[(wrong, 10)]))
        line = [l for l in fc.table(recs).splitlines() if "| live |" in l][0]
        self.assertEqual(line, "| hang_collective | live | 4 | 75% | 75% | 0 | 12.0 | 20.0 |")


def main(argv):
    global fc
    if len(argv) < 2:
        sys.exit(__doc__)
    fc = load(argv[1])
    unittest.main(argv=argv[:1] + argv[2:])


if __name__ == "__main__":
    main(sys.argv)
