"""cases_overrides.py — command-line overrides of the config (docs/cli.md "Overrides",
adr/0030) and the q check (adr/0031): a malformed or refused override stops the run with
exit 2 and one line naming the option; a wavevector_q far from every ring of the file is
a data error naming the nearest ring."""
import os

import aps_fixtures as fx
from corpus import expect_nothing_written

N = 20


def case(*extra, q=0.01, command="nlsq"):
    """A make() writing a two-angle APS-U file (one ring, q = 0.01) and a static config,
    then running command with the extra arguments."""
    def make(d):
        m = [fx.smooth_map(N, 1), fx.smooth_map(N, 2)]
        fx.write_aps_u(os.path.join(d, "data.h5"), [fx.upper(x) for x in m], [0.01],
                       [0.0, 90.0], [1, 2])
        with open(os.path.join(d, "cfg.yaml"), "w") as f:
            f.write("analysis_mode: static\n"
                    "experimental_data: {file_path: data.h5}\n"
                    "analyzer_parameters:\n"
                    "  dt: 0.1\n"
                    "  scattering: {wavevector_q: %r}\n" % q)
        args = [command, "--config", "cfg.yaml"]
        if command == "plot":
            args += ["--out", "out", "--threads", "1"]
        elif command != "validate":
            args += ["--out", "out", "--no-plots", "--threads", "1"]
        return args + list(extra)
    return make


K = "Command-line overrides and the q check"
NONE = expect_nothing_written()

CASES = [
    {"name": "override_initial_not_a_number", "klass": K,
     "make": case("--initial", "D0=abc"), "rc": 2,
     "needles": ["'abc' is not allowed", "--initial D0=abc"],
     "fix": "Give --initial NAME=VALUE with VALUE a number.", "check": NONE},
    {"name": "override_initial_unknown_name", "klass": K,
     "make": case("--initial", "Dzero=1"), "rc": 2,
     "needles": ["--initial Dzero=1", "NAME one of D0"],
     "fix": "Name one of the model's parameters (D0, alpha, D_offset, ...).", "check": NONE},
    {"name": "override_initial_no_value", "klass": K,
     "make": case("--initial", "D0"), "rc": 2,
     "needles": ["--initial D0", "NAME=VALUE"],
     "fix": "Write the value after '=': --initial D0=1000.", "check": NONE},
    {"name": "override_fix_outside_bounds", "klass": K,
     "make": case("--fix", "D0=1e99"), "rc": 2,
     "needles": ["outside its bounds", "--fix D0=1e99"],
     "fix": "Fix the parameter inside its bounds, or widen parameter_space.bounds.",
     "check": NONE},
    {"name": "override_mode_unknown", "klass": K,
     "make": case("--mode", "dynamic"), "rc": 2,
     "needles": ["analysis_mode", "'dynamic' is not allowed", "--mode dynamic"],
     "fix": "Use --mode static or --mode laminar_flow.", "check": NONE},
    {"name": "override_max_iterations_negative", "klass": K,
     "make": case("--max-iterations", "-3"), "rc": 2,
     "needles": ["max_iterations", "'-3' is not allowed", "--max-iterations -3"],
     "fix": "Give a whole number of iterations >= 1.", "check": NONE},
    {"name": "override_phi_malformed", "klass": K,
     "make": case("--phi", "10"), "rc": 2,
     "needles": ["--phi 10", "MIN:MAX"],
     "fix": "Give an angle range as MIN:MAX in degrees, e.g. --phi -10:10.", "check": NONE},
    {"name": "override_phi_reversed", "klass": K,
     "make": case("--phi", "90:10"), "rc": 2,
     "needles": ["--phi 90:10", "MIN <= MAX"],
     "fix": "Write the smaller angle first.", "check": NONE},
    {"name": "override_phi_selects_nothing", "klass": K,
     "make": case("--phi", "30:60"), "rc": 1,
     "needles": ["no map left after φ filtering", "available: 0, 90"],
     "fix": "Choose a range that holds at least one angle of the ring (validate lists "
            "them).", "check": NONE},
    {"name": "override_set_unknown_key", "klass": K,
     "make": case("--set", "analyzer_parameters.frame_time=1"), "rc": 2,
     "needles": ["unknown config key", "--set analyzer_parameters.frame_time=1"],
     "fix": "Set a key xpcsfit reads (docs/config.md); dt and q are short names.",
     "check": NONE},
    {"name": "override_set_list_malformed", "klass": K,
     "make": case("--set", "q=[0.01", command="validate"), "rc": 2,
     "needles": ["wavevector_q", "is not a list", "--set q=[0.01"],
     "fix": "Write a list as [V1, V2, ...] (a flow list, as in YAML): --set "
            "'q=[0.003, 0.008]'.", "check": NONE},
    {"name": "override_set_list_nested", "klass": K,
     "make": case("--set", "q=[0.01, [0.02]]", command="validate"), "rc": 2,
     "needles": ["wavevector_q", "item 2", "--set q=[0.01, [0.02]]"],
     "fix": "A --set list holds single values: [V1, V2, ...].", "check": NONE},
    {"name": "override_set_list_empty", "klass": K,
     "make": case("--set", "q=[]", command="validate"), "rc": 2,
     "needles": ["wavevector_q: a list of 0 values", "in --set q=[]"],
     "fix": "Name at least one ring: --set 'q=[0.01]' (or a number).", "check": NONE},
    {"name": "override_set_no_equals", "klass": K,
     "make": case("--set", "dt"), "rc": 2,
     "needles": ["--set dt", "KEY=VALUE"],
     "fix": "Write --set KEY=VALUE.", "check": NONE},
    {"name": "override_nlsq_result_missing", "klass": K,
     "make": case("--nlsq-result", "nowhere"), "rc": 2,
     "needles": ["--nlsq-result nowhere", "parameters.json"],
     "fix": "Name a finished NLSQ result folder (DIR or DIR/nlsq with parameters.json).",
     "check": NONE},
    {"name": "override_nlsq_result_fifo", "klass": K,
     "make": lambda d: (os.mkdir(os.path.join(d, "r")),
                        os.mkfifo(os.path.join(d, "r", "parameters.json")),
                        case("--nlsq-result", "r")(d))[2],
     "rc": 2, "timeout": 20,
     "needles": ["--nlsq-result r", "NLSQ result is not a regular file (a FIFO)"],
     "fix": "Name a finished NLSQ result folder; a FIFO in place of parameters.json is "
            "refused unread (it would block).",
     "check": NONE},
    {"name": "override_validate_bad_dt", "klass": K,
     "make": case("--set", "dt=-1", command="validate"), "rc": 2,
     "needles": ["analyzer_parameters.dt", "--set dt=-1"],
     "fix": "dt is a positive number of seconds."},
    {"name": "q_far_from_every_ring", "klass": K, "make": case(q=0.02), "rc": 1,
     "needles": ["wavevector_q = 0.02", "nearest q ring", "0.01 1/A", "within 5%",
                 "data.h5"],
     "fix": "Set wavevector_q to one of the file's rings (validate prints them), or "
            "check that the config belongs to this file.", "check": NONE},
    {"name": "override_plot_dir_without_config", "klass": K,
     "make": lambda d: ["plot", d, "--phi", "0:10"], "rc": 2,
     "needles": ["need --config", "plot DIR redraws"],
     "fix": "Overrides choose the data of `plot --config C.yaml`; a result folder is "
            "redrawn as it was fitted.", "check": NONE},
    {"name": "override_plot_data_bad_phi", "klass": K,
     "make": case("--phi", "10", command="plot"), "rc": 2,
     "needles": ["--phi 10", "MIN:MAX"],
     "fix": "Give --phi MIN:MAX in degrees.", "check": NONE},
]
