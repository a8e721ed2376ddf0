#!/usr/bin/env python3
"""homodyne_keys.py — list the keys of homodyne configs that xpcsfit does not use, as
`xpcsfit validate` reports them (docs/config.md "Key accounting"), in Markdown.

usage: scripts/homodyne_keys.py XPCSFIT CONFIG.yaml [CONFIG.yaml ...]

validate needs data whose angles pass the config's filter: for each config a small file
is simulated (40 frames, the config's mode, one angle in the middle of each target range)
in a scratch folder, and passed with --data. Needs python3-yaml."""
import json
import os
import subprocess
import sys
import tempfile

import yaml

LAMINAR = {"D0": 20000, "alpha": -0.3, "D_offset": 100, "gamma_dot_t0": 0.002, "beta": -0.2,
           "gamma_dot_t_offset": 0.0002, "phi0": 1.0}


def angles(tree):
    pf = tree.get("phi_filtering") or {}
    out = []
    for r in pf.get("target_ranges") or []:
        lo, hi = float(r["min_angle"]), float(r["max_angle"])
        mid = (lo + hi) / 2 if lo <= hi else (lo + hi + 360) / 2
        out.append(((mid + 180) % 360) - 180)
    return out or [0.0, 45.0, 90.0]


def simulate(xf, tree, folder):
    mode = str(tree.get("analysis_mode", "static"))
    mode = "laminar_flow" if mode == "laminar_flow" else "static"
    names = list(LAMINAR)[:7 if mode == "laminar_flow" else 3]
    q = ((tree.get("analyzer_parameters") or {}).get("scattering") or {}).get("wavevector_q")
    cfg = {"analysis_mode": mode,
           "analyzer_parameters": {"dt": 0.001, "end_frame": 40,
                                   "scattering": {"wavevector_q": float(q or 0.0054)}},
           "initial_parameters": {"parameter_names": names,
                                  "values": [LAMINAR[n] for n in names]}}
    path = os.path.join(folder, "sim.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    data = os.path.join(folder, "sim.h5")
    phi = ",".join("%g" % a for a in angles(tree))
    subprocess.run([xf, "simulate", "--config", path, "--phi", phi, "--out", data],
                   check=True, capture_output=True)
    return data


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    xf = argv[1]
    for config in argv[2:]:
        tree = yaml.safe_load(open(config)) or {}
        with tempfile.TemporaryDirectory() as folder:
            data = simulate(xf, tree, folder)
            p = subprocess.run([xf, "validate", "--json", "--config", config, "--data", data],
                               capture_output=True, text=True)
        if p.returncode != 0:
            print("- `%s`: validate failed: %s" % (config, p.stderr.strip()))
            continue
        ignored = json.loads(p.stdout)["ignored_keys"]
        total = sum(len(v) for v in ignored.values())
        print("`%s` — %d keys not used:\n" % (os.path.basename(config), total))
        for section, keys in ignored.items():
            print("- %s: %s" % (section or "(top level)", ", ".join(keys)))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
