# compare_records.py A.json B.json: the correlators of two latke-propagator records of one run
# on different process grids agree (each channel to 1e-7 of its largest |C(t)|), measurement by
# measurement, at the smeared or wall sink, at every momentum class and for every kappa pair too
# where the records have them; prints "records agree" (with "(both sinks)", "(wall sink)",
# "(momenta)", "(kappa pairs)") or names the first difference and exits 1.
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


a, b = load(sys.argv[1]), load(sys.argv[2])
if len(a["measurements"]) != len(b["measurements"]):
    sys.exit(f"{len(a['measurements'])} and {len(b['measurements'])} measurements")
for ma, mb in zip(a["measurements"], b["measurements"]):
    if (ma["config"], ma["kappa"]) != (mb["config"], mb["kappa"]):
        sys.exit(f"measurement (config, kappa) {ma['config'], ma['kappa']} against {mb['config'], mb['kappa']}")
    if a.get("momenta") != b.get("momenta"):
        sys.exit(f"momentum classes {a.get('momenta')} against {b.get('momenta')}")
    sinks = [k for k in ("correlators", "correlators_smeared_sink", "correlators_wall_sink", "correlators_momentum",
                         "correlators_momentum_smeared_sink") if k in ma or k in mb]
    if len(ma.get("pairs", [])) != len(mb.get("pairs", [])):
        sys.exit(f"config {ma['config']} kappa {ma['kappa']}: {len(ma.get('pairs', []))} against "
                 f"{len(mb.get('pairs', []))} kappa pairs")
    for j, (pa, pb) in enumerate(zip(ma.get("pairs", []), mb.get("pairs", []))):
        if pa["quark_kappa"] != pb["quark_kappa"]:
            sys.exit(f"config {ma['config']} kappa {ma['kappa']}: pair {j} with {pa['quark_kappa']} against "
                     f"{pb['quark_kappa']}")
        ma = dict(ma, **{f"pair{j}": pa["correlators"]})
        mb = dict(mb, **{f"pair{j}": pb["correlators"]})
        if "correlators_momentum" in pa:
            ma[f"pair{j}_momentum"], mb[f"pair{j}_momentum"] = pa["correlators_momentum"], pb["correlators_momentum"]
    sinks += [k for k in ma if k.startswith("pair") and k != "pairs"]
    for sink in sinks:
        if sink not in ma or sink not in mb:
            sys.exit(f"config {ma['config']} kappa {ma['kappa']}: {sink} in only one record")
        sets_a, sets_b = (ma[sink], mb[sink]) if isinstance(ma[sink], list) else ([ma[sink]], [mb[sink]])
        if len(sets_a) != len(sets_b):
            sys.exit(f"config {ma['config']} kappa {ma['kappa']} {sink}: {len(sets_a)} against {len(sets_b)} classes")
        for i, (sa, sb) in enumerate(zip(sets_a, sets_b)):
            for name, ca in sa.items():
                cb = sb[name]
                scale = max(abs(x) for x in ca["re"] + ca["im"])
                for part in ("re", "im"):
                    for t, (x, y) in enumerate(zip(ca[part], cb[part])):
                        if abs(x - y) > 1e-7 * scale:
                            sys.exit(f"config {ma['config']} kappa {ma['kappa']} {sink}[{i}] {name} {part}[{t}]: "
                                     f"{x} against {y}")
both = all("correlators_smeared_sink" in m for m in a["measurements"])
moving = all("correlators_momentum" in m for m in a["measurements"])
paired = any(m.get("pairs") for m in a["measurements"])
wall = all("correlators_wall_sink" in m for m in a["measurements"])
print("records agree" + (" (both sinks)" if both else "") + (" (wall sink)" if wall else "")
      + (" (momenta)" if moving else "") + (" (kappa pairs)" if paired else ""))
