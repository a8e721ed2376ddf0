"""test_config_keys.py — key accounting (adr/0032): `validate` lists every key of
homodyne's templates that xpcsfit does not use, by dotted path grouped by section, and
none it uses; --strict refuses such a config (exit 2, the keys named) in validate, nlsq
and batch; a config of xpcsfit's own keys passes --strict. The homodyne keys honoured here:
output.base_directory is the default --out, logging.level ERROR quiets the console,
plotting.dpi scales the PNGs' pixel size (100 dpi = the nominal pages), in `plot DIR`'s
redraw too."""
import os
import shutil
import struct
import subprocess

import yaml

from aps_fixtures import check, run, run_tests, tmp_dir, validate
from waits import RUN_GUARD_S

SRC = os.environ["XF_SOURCE_DIR"]
T = tmp_dir()
CONFIGS = os.path.join(SRC, "tests", "configs")
CLEAN = {"analysis_mode": "laminar_flow",
         "analyzer_parameters": {"dt": 0.001, "end_frame": 40,
                                 "scattering": {"wavevector_q": 0.0054},
                                 "geometry": {"stator_rotor_gap": 2000000}},
         "initial_parameters": {"parameter_names": ["D0", "alpha", "D_offset",
                                                    "gamma_dot_t0", "beta",
                                                    "gamma_dot_t_offset", "phi0"],
                                "values": [20000, -0.3, 100, 0.002, -0.2, 0.0002, 1.0]}}


def write_yaml(name, cfg):
    path = os.path.join(T, name)
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


def simulated(name, mode, phi, q=0.0054):
    """A file at q (the data must be near the config's q: adr/0031's 5 % tolerance)."""
    cfg = dict(CLEAN, analysis_mode=mode)
    cfg["analyzer_parameters"] = dict(CLEAN["analyzer_parameters"],
                                      scattering={"wavevector_q": q})
    if mode == "static":
        cfg = dict(cfg, initial_parameters={"parameter_names": ["D0", "alpha", "D_offset"],
                                            "values": [3000, -1.2, 0]})
    data = os.path.join(T, name + ".h5")
    rc, out, err = run(["simulate", "--config", write_yaml(name + ".yaml", cfg), "--phi",
                        phi, "--out", data, "--force", "--noise", "0.002", "--seed", "3"])
    check(rc == 0, "simulate: " + err)
    return data


LAMINAR = simulated("keys_laminar", "laminar_flow", "-8,-3,2,7,86,90,94")
STATIC = simulated("keys_static", "static", "-5,0,5,175,-175,270")
STATIC_71 = simulated("keys_static71", "static", "-5,0,5,175,-175,270", q=0.0071)
LAMINAR_237 = simulated("keys_laminar237", "laminar_flow", "-8,-3,2,7,86,90,94", q=0.0237)


def paths(ignored):
    """{section: [keys]} back to dotted paths."""
    return {(s + "." if s else "") + k for s, keys in ignored.items() for k in keys}


def ignored_of(config, data):
    got, _ = validate(os.path.join(CONFIGS, config), data)
    return paths(got["ignored_keys"])


def test_templates_list_ignored_keys():
    for config, data in [("homodyne_laminar_template.yaml", LAMINAR),
                         ("homodyne_static_template.yaml", STATIC),
                         ("homodyne_current_static.yaml", STATIC_71)]:
        ign = ignored_of(config, data)
        tree = yaml.safe_load(open(os.path.join(CONFIGS, config)))
        check("metadata.config_version" in ign or "metadata" not in tree,
              "%s: metadata.config_version not listed: %s" % (config, sorted(ign)))
        check("phi_filtering.target_ranges[0].description" in ign,
              "%s: target_ranges description not listed" % config)
        for used in ["analysis_mode", "analyzer_parameters.dt", "output.directory",
                     "output.base_directory", "logging.level", "plotting.dpi",
                     "optimization.nlsq.loss",
                     "initial_parameters.parameter_names", "parameter_space.bounds[0].name",
                     "parameter_space.bounds[0].min", "phi_filtering.enabled",
                     "phi_filtering.target_ranges[0].min_angle"]:
            check(used not in ign, "%s: honoured key %s listed as ignored" % (config, used))
        # every listed key exists in the file
        for p in ign:
            node = tree
            for part in p.replace("[", ".[").split("."):
                node = node[int(part[1:-1])] if part.startswith("[") else node[part]


def test_grouped_text_listing():
    # the fixture gives 3 per-angle contrast starts and its phi ranges keep 4 angles of
    # this file: validate builds the fit's problem (adr/0062) and refuses it as nlsq does
    full = os.path.join(CONFIGS, "laminar_full.yaml")
    rc, out, err = run(["validate", "--config", full, "--data", LAMINAR_237])
    check(rc == 2 and err.strip().endswith("contrast: 3 values given, expected 1 or 4 "
                                           "(one per angle kept)"), f"validate: {rc} {err}")
    with open(full) as f:
        text = f.read().replace("contrast: [0.2, 0.25, 0.3]", "contrast: [0.2, 0.25, 0.3, 0.3]")
    fixed = os.path.join(T, "laminar_full_4.yaml")
    with open(fixed, "w") as f:
        f.write(text)
    rc, out, err = run(["validate", "--config", fixed, "--data", LAMINAR_237])
    check(rc == 0, err)
    lines = out.splitlines()
    check(any(l.startswith("ignored_keys: ") for l in lines), out)
    check("ignored: optimization.nlsq: workflow, x_scale" in lines, out)
    check("ignored: metadata: config_version" in lines, out)


def test_strict_refuses_ignored_keys():
    cfg = os.path.join(CONFIGS, "laminar_full.yaml")
    rc, out, err = run(["validate", "--strict", "--config", cfg, "--data", LAMINAR])
    check(rc == 2, "validate --strict exit %d" % rc)
    check("--strict" in err and "optimization.nlsq.x_scale" in err and
          "metadata.config_version" in err and err.count("\n") == 1, err)
    out_dir = os.path.join(T, "keys_strict_out")
    rc, out, err = run(["nlsq", "--strict", "--config", cfg, "--data", LAMINAR, "--out",
                        out_dir, "--no-plots", "--force"])
    check(rc == 2 and "optimization.nlsq.x_scale" in err, "nlsq --strict: %d %s" % (rc, err))
    check(not os.path.exists(os.path.join(out_dir, "nlsq", "parameters.json")),
          "nlsq --strict wrote a result")
    rc, out, err = run(["batch", "--strict", "--config", cfg, "--out",
                        os.path.join(T, "keys_strict_batch"), LAMINAR])
    check(rc == 2 and "optimization.cmc.backend" in err, "batch --strict: %d %s" % (rc, err))


def test_q_ring_forms_are_used_keys():
    """wavevector_q as all, a list or a {min, max} range (adr/0063) is a used key, with
    everything under it: --strict passes, nothing is listed as ignored; a key inside a
    range that is not min or max is listed."""
    for name, q in (("all", "all"), ("list", [0.0054, 0.0055]),
                    ("range", {"min": 0.005, "max": 0.006})):
        c = dict(CLEAN, analysis_mode="static",
                 initial_parameters={"parameter_names": ["D0", "alpha", "D_offset"],
                                     "values": [3000, -1.2, 0]})
        c["analyzer_parameters"] = dict(CLEAN["analyzer_parameters"],
                                        scattering={"wavevector_q": q})
        cfg = write_yaml("keys_q_%s.yaml" % name, c)
        rc, out, err = run(["validate", "--strict", "--config", cfg, "--data", STATIC])
        check(rc == 0 and "ignored_keys: 0" in out.splitlines(), "q %s: %s %s" % (name, out, err))
    c["analyzer_parameters"]["scattering"] = {"wavevector_q": {"min": 0.005, "max": 0.006,
                                                               "step": 1}}
    cfg = write_yaml("keys_q_step.yaml", c)
    rc, out, err = run(["validate", "--strict", "--config", cfg, "--data", STATIC])
    check(rc == 2 and "wavevector_q.step" in err, "unknown key in a q range: %s" % err)


def test_clean_config_passes_strict():
    cfg = write_yaml("keys_clean.yaml", CLEAN)
    rc, out, err = run(["validate", "--strict", "--config", cfg, "--data", LAMINAR])
    check(rc == 0, err)
    check("ignored_keys: 0" in out.splitlines(), out)
    got, _ = validate(cfg, LAMINAR)
    check(got["ignored_keys"] == {}, str(got["ignored_keys"]))


def nlsq_in(cwd, cfg, extra=()):
    p = subprocess.run([os.environ["XF_BINARY"], "nlsq", "--config", cfg, "--data", LAMINAR,
                        "--no-plots", "--no-surfaces", "--force"] + list(extra),
                       capture_output=True, text=True, cwd=cwd, timeout=RUN_GUARD_S)
    return p.returncode, p.stdout, p.stderr


def test_base_directory_and_logging_level():
    work = os.path.join(T, "keys_cwd")
    os.makedirs(work, exist_ok=True)
    cfg = write_yaml("keys_out.yaml", dict(CLEAN, output={"base_directory": "from_config"},
                                            logging={"level": "ERROR"}))
    shutil.rmtree(os.path.join(work, "from_config"), ignore_errors=True)
    rc, out, err = nlsq_in(work, cfg)
    check(rc in (0, 1), err)
    check(os.path.exists(os.path.join(work, "from_config", "nlsq", "parameters.json")),
          "output.base_directory not used as the default --out")
    check(all(l.startswith("xpcsfit: error:") for l in err.splitlines() if l.strip()),
          "logging.level ERROR printed more than errors on stderr: %r" % err)
    check("nlsq:" in out, "the summary is still on stdout")
    log = open(os.path.join(work, "from_config", "nlsq", "run.log")).read()
    check("nlsq on" in log or "iteration" in log or len(log) > 0, "run.log empty")
    # --out wins; INFO (the default) shows the progress lines
    cfg2 = write_yaml("keys_out2.yaml", dict(CLEAN, output={"base_directory": "unused"}))
    rc, out, err = nlsq_in(work, cfg2, ["--out", "given"])
    check(os.path.exists(os.path.join(work, "given", "nlsq", "parameters.json")), err)
    check(not os.path.exists(os.path.join(work, "unused")), "base_directory beat --out")
    check("xpcsfit: nlsq on" in err, "INFO: progress line missing: %r" % err)
    ign = paths(validate(cfg, LAMINAR)[0]["ignored_keys"])
    check(not {"output.base_directory", "logging.level"} & ign, str(ign))
    # homodyne's current templates say output.directory: the same meaning
    cfg3 = write_yaml("keys_out3.yaml", dict(CLEAN, output={"directory": "from_directory"}))
    shutil.rmtree(os.path.join(work, "from_directory"), ignore_errors=True)
    rc, out, err = nlsq_in(work, cfg3)
    check(os.path.exists(os.path.join(work, "from_directory", "nlsq", "parameters.json")),
          "output.directory not used as the default --out: " + err)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24])


def test_plotting_dpi_scales_png():
    work = os.path.join(T, "keys_dpi")
    os.makedirs(work, exist_ok=True)
    sizes = {}
    for dpi in (None, 50, 200):
        cfg = dict(CLEAN) if dpi is None else dict(CLEAN, plotting={"dpi": dpi})
        path = write_yaml("keys_dpi_%s.yaml" % dpi, cfg)
        out = "dpi_%s" % dpi
        # dpi 200 keeps its surfaces, for `plot DIR` below
        surf = [] if dpi == 200 else ["--no-surfaces"]
        p = subprocess.run([os.environ["XF_BINARY"], "nlsq", "--config", path, "--data",
                            LAMINAR, "--force", "--out", out] + surf,
                           capture_output=True, text=True, cwd=work, timeout=RUN_GUARD_S)
        plots = os.path.join(work, out, "nlsq", "plots")
        check(os.path.exists(os.path.join(plots, "overview.png")), p.stderr)
        sizes[dpi] = png_size(os.path.join(plots, "overview.png"))
    w, h = sizes[None]  # the nominal page: 100 dpi
    check(sizes[200] == (2 * w, 2 * h), "dpi 200: %s, nominal %s" % (sizes[200], (w, h)))
    # `plot DIR` redraws at the run's dpi (results.h5 /nlsq/plot_dpi)
    overview = os.path.join(work, "dpi_200", "nlsq", "plots", "overview.png")
    os.remove(overview)
    p = subprocess.run([os.environ["XF_BINARY"], "plot", "dpi_200"], capture_output=True,
                       text=True, cwd=work, timeout=RUN_GUARD_S)
    check(p.returncode == 0 and os.path.exists(overview) and
          png_size(overview) == (2 * w, 2 * h), "plot DIR at dpi 200: %s" % p.stderr)
    check(sizes[50] == ((w + 1) // 2, (h + 1) // 2) or sizes[50] == (w // 2, h // 2),
          "dpi 50: %s" % (sizes[50],))
    bad = write_yaml("keys_dpi_bad.yaml", dict(CLEAN, plotting={"dpi": 5000}))
    rc, out, err = run(["validate", "--config", bad, "--data", LAMINAR])
    check(rc == 2 and "plotting.dpi" in err, err)


if __name__ == "__main__":
    raise SystemExit(run_tests([test_q_ring_forms_are_used_keys, test_templates_list_ignored_keys, test_grouped_text_listing,
                                test_strict_refuses_ignored_keys,
                                test_clean_config_passes_strict,
                                test_base_directory_and_logging_level,
                                test_plotting_dpi_scales_png]))
