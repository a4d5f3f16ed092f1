# The performance model (examples/latke_model.py) against a recorded machine file: each
# prediction re-derived here by hand from the formulas of docs/latke-scale.md, and the
# machine file's checks. Usage: test_model.py DIR_OF_latke_model.py MACHINE_FILE
import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, sys.argv[1])
MACHINE = sys.argv[2]
import latke_model as m  # noqa: E402


class Model(unittest.TestCase):
    """Closed forms on the recorded machine without its volume table (one efficiency per
    precision); the table's interpolation on its own."""

    def setUp(self):
        with open(MACHINE) as f:
            self.full = json.load(f)
        self.d = {k: v for k, v in self.full.items() if k != "matpc_by_volume"}
        self.mc = m.Machine(self.d)

    def rate(self, p):  # bytes per microsecond of a stencil kernel in precision p
        return self.d["matpc_vs_copy"][p] * self.d["copy_gbs"] * 1e3

    def test_matpc_on_one_rank_is_its_bytes_at_the_calibrated_bandwidth(self):
        vcb = 32 ** 3 * 64 / 2
        site = 8 * (12 * 2 + (24 * 2 + 4)) + (72 * 2 + 8) + (24 * 2 + 4)  # half: links, spinors, clover, output
        expected = (2 * site + 24 * 2 + 4) * vcb / self.rate("half")  # one rank: the launches hide
        got = m.matpc_us(self.mc, m.Split([32, 32, 32, 64], [1, 1, 1, 1], self.mc), "half")
        self.assertAlmostEqual(got, expected, delta=1e-9 * expected)
        # Double: 8-byte reals, no norms.
        site_d = 8 * (12 * 8 + 24 * 8) + 72 * 8 + 24 * 8
        expected_d = (2 * site_d + 24 * 8) * vcb / self.rate("double")
        got_d = m.matpc_us(self.mc, m.Split([32, 32, 32, 64], [1, 1, 1, 1], self.mc), "double")
        self.assertAlmostEqual(got_d, expected_d, delta=1e-9 * expected_d)

    def test_matpc_split_in_t_overlaps_the_exchange_with_the_interior(self):
        # 32^3x64 on 4 ranks split in t: local 32^3x16; the boundary sites are the two t slices.
        L, launch = 32, self.d["launch_us"]
        vcb, edge = L ** 3 * 16 / 2, 2 * L ** 3 / 2
        site = 8 * (12 * 4 + 24 * 4) + 72 * 4 + 24 * 4  # single
        face = L ** 3 / 2 * 12 * 4
        exchanges = sorted((e["face_bytes"], e["us"]) for e in self.d["exchange"])
        i = max(k for k in range(len(exchanges) - 1) if exchanges[k][0] <= face or k == 0)
        i = min(i, len(exchanges) - 2)
        (x0, y0), (x1, y1) = exchanges[i], exchanges[i + 1]
        ex = y0 + (face - x0) / (x1 - x0) * (y1 - y0)
        copy = self.d["copy_gbs"] * 1e3
        pack = 2 * edge * (24 * 4) / copy
        interior = (vcb - edge) * site / self.rate("single")
        exterior = edge * site / self.rate("single")
        dslash = max(interior, pack + ex) + exterior
        expected = 2 * dslash + vcb * 24 * 4 / copy + 6 * launch  # the host waits: pack, interior, exterior exposed
        got = m.matpc_us(self.mc, m.Split([32, 32, 32, 64], [1, 1, 1, 4], self.mc), "single")
        self.assertAlmostEqual(got, expected, delta=1e-9 * expected)
        # Strong scaling never beats ideal, and four ranks beat one.
        one = m.matpc_us(self.mc, m.Split([32, 32, 32, 64], [1, 1, 1, 1], self.mc), "single")
        self.assertGreater(got, one / 4)
        self.assertLess(got, one)

    def test_bicgstab_iteration(self):
        s = m.Split([16, 16, 16, 32], [1, 1, 1, 2], self.mc)
        parts = m.bicgstab_iteration_us(self.mc, s, "half")
        vcb = 16 ** 3 * 16 / 2
        op = m.matpc_parts(self.mc, s, "half")
        self.assertAlmostEqual(parts["operator kernels"], 2 * op["kernels"], places=9)
        self.assertAlmostEqual(parts["halo (not hidden)"], 2 * op["halo"], places=9)
        self.assertAlmostEqual(parts["vectors"], (19 * 52 + 2 * 96) * vcb / (self.d["copy_gbs"] * 1e3), places=9)
        self.assertAlmostEqual(parts["launches"], (12 + 6) * self.d["launch_us"], places=9)
        sums = {g["ranks"]: g["us"] for g in self.d["global_sum"]}
        self.assertAlmostEqual(parts["global sums"], 3 * sums[2], places=9)
        one = m.bicgstab_iteration_us(self.mc, m.Split([16, 16, 16, 32], [1, 1, 1, 1], self.mc), "half")
        self.assertAlmostEqual(one["launches"], 3 * self.d["launch_us"], places=9)  # after each global sum

    def test_kernel_efficiency_follows_the_volume_table(self):
        mc = m.Machine(self.full)
        table = self.full.get("matpc_by_volume", {}).get("half")
        if not table:
            self.skipTest("the machine file has no volume table")
        (v0, r0), (v1, r1) = sorted(table)[:2]
        self.assertEqual(mc.efficiency("half", v0), r0)
        self.assertAlmostEqual(mc.efficiency("half", math.sqrt(v0 * v1)), (r0 + r1) / 2, places=12)
        self.assertEqual(mc.efficiency("half", v0 / 8), r0)  # below the table: its smallest volume's

    def test_global_sums_past_one_node_add_a_step_per_doubling(self):
        sums = sorted((g["ranks"], g["us"]) for g in self.d["global_sum"])
        node = m.DEFAULT_NETWORK["gpus_per_node"]
        for r, us in sums:
            self.assertEqual(self.mc.global_sum_us(r), us)
        (r0, u0), (r1, u1) = sums[-2], sums[-1]
        at_node = u0 + (math.log2(node) - math.log2(r0)) / (math.log2(r1) - math.log2(r0)) * (u1 - u0)
        self.assertAlmostEqual(self.mc.global_sum_us(node), at_node, places=9)
        self.assertAlmostEqual(self.mc.global_sum_us(64 * node), at_node + m.DEFAULT_NETWORK["allreduce_step_us"] * 6,
                               places=9)

    def test_exchanges_past_one_node_use_the_network(self):
        big = 8 << 20
        within = self.mc.exchange_us(big, 8)
        across = self.mc.exchange_us(big, 8, crosses_nodes=True)
        self.assertAlmostEqual(across, max(within, 3.0 + big / 50e3), places=9)
        self.assertEqual(self.mc.exchange_us(big, 1), 0.0)

    def test_default_grids_split_the_largest_local_extent(self):
        self.assertEqual(m.default_grid([32, 32, 32, 64], 1), [1, 1, 1, 1])
        self.assertEqual(m.default_grid([32, 32, 32, 64], 4), [1, 1, 1, 4])
        self.assertEqual(m.default_grid([64, 64, 64, 128], 8), [1, 1, 2, 4])
        with self.assertRaisesRegex(m.ModelError, "powers of two"):
            m.default_grid([32, 32, 32, 64], 3)

    def test_a_grid_that_does_not_fit_is_named(self):
        with self.assertRaisesRegex(m.ModelError, r"grid \[1, 1, 1, 3\] does not fit lattice"):
            m.Split([32, 32, 32, 64], [1, 1, 1, 3], self.mc)

    def test_bad_machine_files_are_named(self):
        bad = dict(self.d)
        del bad["copy_gbs"]
        bad["schema"] = "latke-machine/0"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.json")
            with open(path, "w") as f:
                json.dump(bad, f)
            with self.assertRaisesRegex(m.ModelError, "missing field 'copy_gbs'"):
                m.Machine.load(path)
            with open(path, "w") as f:
                f.write("{ not json")
            with self.assertRaisesRegex(m.ModelError, "not JSON"):
                m.Machine.load(path)

    def test_multigrid_levels_gather_below_the_rule(self):
        profile = [{"level": 0, "where": "32x32x32x64 per rank", "ms_per_cycle": 4.0, "visits": 1, "halo_wait_ms": 0,
                    "exchanges": 12, "global_sums": 4, "launches": 57, "gather_ms": 0},
                   {"level": 1, "where": "8x8x8x16 per rank", "ms_per_cycle": 2.0, "visits": 1, "halo_wait_ms": 0,
                    "exchanges": 12, "global_sums": 4, "launches": 74, "gather_ms": 0},
                   {"level": 2, "where": "4x4x4x8 per rank", "ms_per_cycle": 0.7, "visits": 1, "halo_wait_ms": 0,
                    "exchanges": 12, "global_sums": 4, "launches": 50, "gather_ms": 0}]
        s = m.Split([32, 32, 32, 64], [1, 1, 1, 4], self.mc)
        parts = m.mg_iteration_us(self.mc, s, profile)
        where = [lv["where"] for lv in parts["levels"]]
        self.assertEqual(where, ["spread", "spread", "gathered"])  # level 2: 512 sites / 4 ranks
        self.assertGreaterEqual(parts["levels"][2]["us"], 700.0)    # gathered: its one-rank time and more
        lv0 = profile[0]
        fixed = lv0["launches"] * self.d["launch_us"] + lv0["global_sums"] * self.mc.global_sum_us(1)
        face = 32 ** 3 / 2 * (12 * 2 + 4)  # level 0: half spinors of one parity in half
        expected0 = ((4000.0 - fixed) / 4 + lv0["launches"] * self.d["launch_us"]
                     + 12 * self.mc.exchange_us(face, 4) + 4 * self.mc.global_sum_us(4))
        self.assertAlmostEqual(parts["levels"][0]["us"], expected0, places=9)
        # With a profile on several ranks, its exchanges and launches per cycle count.
        comm = [dict(lv, exchanges=15, launches=66) for lv in profile]
        with_comm = m.mg_iteration_us(self.mc, s, profile, comm_profile=comm)
        self.assertAlmostEqual(with_comm["levels"][0]["us"] - parts["levels"][0]["us"],
                               3 * self.mc.exchange_us(face, 4) + 9 * self.d["launch_us"], places=9)

    def test_multigrid_levels_gather_onto_fewer_ranks_past_the_rule(self):
        """On 16 ranks level 1 (8192 sites, 512 per rank) goes onto 8 ranks (1024 sites each:
        the t split halved, thinnest there) in copies of 2, and level 2 whole onto every rank."""
        self.assertEqual(m.gather_ranks(8192, 16), 8)
        self.assertEqual(m.gather_ranks(8192, 4), 4)   # 2048 per rank: spread
        self.assertEqual(m.gather_ranks(512, 8), 1)    # no rank count leaves 1024 sites
        self.assertEqual(m.gather_ranks(1728, 4), 1)   # 48^3x96 level 2 on 4 ranks: whole, as measured
        self.assertEqual(m.telescope_grid([8, 8, 8, 16], [1, 1, 2, 8], 8), [1, 1, 2, 4])
        self.assertEqual(m.telescope_grid([4, 4, 4, 8], [1, 2, 2, 1], 2), [1, 1, 2, 1])
        profile = [{"level": 0, "where": "32x32x32x64 per rank", "ms_per_cycle": 4.0, "exchanges": 12,
                    "global_sums": 4, "launches": 57},
                   {"level": 1, "where": "8x8x8x16 per rank", "ms_per_cycle": 2.0, "exchanges": 12,
                    "global_sums": 4, "launches": 74},
                   {"level": 2, "where": "4x4x4x8 per rank", "ms_per_cycle": 0.7, "exchanges": 12,
                    "global_sums": 4, "launches": 50}]
        s = m.Split([32, 32, 32, 64], [1, 1, 2, 8], self.mc)
        parts = m.mg_iteration_us(self.mc, s, profile)
        self.assertEqual([lv["where"] for lv in parts["levels"]], ["spread", "on 8 ranks", "gathered"])
        launch = self.d["launch_us"]
        work1 = 2000.0 - 74 * launch - 4 * self.mc.global_sum_us(1)
        face1 = 8 * 8 * 4 * 2 * 24 * 8  # level 1 on 1,1,2,4: local 8x8x4x4, faces of 256 sites
        gather1 = self.mc.exchange_us(8192 * 2 * 24 * 8 / 16, 2, True)  # groups of 2 ranks, one step
        expected1 = (work1 / 8 + 74 * launch + 12 * self.mc.exchange_us(face1, 8, True)
                     + 4 * self.mc.global_sum_us(8) + gather1)
        self.assertAlmostEqual(parts["levels"][1]["us"], expected1, places=9)
        gather2 = self.mc.exchange_us(512 * 2 * 24 * 8 / 8, 8, True) * 3  # from 8 ranks onto each: 3 steps
        self.assertAlmostEqual(parts["levels"][2]["us"], 700.0 + gather2, places=9)
        # Whole onto every rank instead (no rank count leaves a billion sites): level 1 costs
        # its one-rank time and more.
        whole = m.mg_iteration_us(self.mc, s, profile, onto_sites=1 << 30)
        self.assertEqual([lv["where"] for lv in whole["levels"]], ["spread", "gathered", "gathered"])
        self.assertGreater(whole["levels"][1]["us"], 2000.0)
        self.assertAlmostEqual(whole["levels"][2]["us"], 700.0, places=9)  # gathered above: no gather of its own


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
