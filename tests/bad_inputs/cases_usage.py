"""cases_usage.py — command lines xpcsfit cannot use at all (docs/cli.md): an unknown
command, none, an extra argument, an option where the command goes without --method, a
--method that names no fit (homodyne's `xpcsfit --config C.yaml --method nlsq|cmc`). Like every error, one line on stderr (the list of
commands is on stdout with --help), exit 2, nothing written (issue 24)."""
from corpus import expect_nothing_written

KLASS = "Command line"


def one_line(scratch, rc, out, err):
    """A check: stderr is that one line, stdout empty."""
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and not out.strip(), "more than one line: %r %r" % (out, err)
    expect_nothing_written(".")(scratch, rc, out, err)


CASES = [
    {"name": "unknown_command", "klass": KLASS, "make": lambda d: ["bogus"],
     "rc": 2, "needles": ["unknown command 'bogus'", "xpcsfit --help"],
     "fix": "Run `xpcsfit --help` for the list of commands.", "check": one_line},
    {"name": "no_command", "klass": KLASS, "make": lambda d: ["-q"],
     "rc": 2, "needles": ["no command given", "xpcsfit --help"],
     "fix": "Name a command first: `xpcsfit nlsq --config C.yaml` (`xpcsfit --help` lists "
            "them).", "check": one_line},
    {"name": "version_extra_argument", "klass": KLASS, "make": lambda d: ["version", "x"],
     "rc": 2, "needles": ["version takes no argument", "'x'"],
     "fix": "Run `xpcsfit version` alone.", "check": one_line},
    {"name": "unknown_option", "klass": KLASS,
     "make": lambda d: ["nlsq", "--bogus"],
     "rc": 2, "needles": ["unknown or incomplete option '--bogus'", "xpcsfit nlsq --help"],
     "fix": "Run `xpcsfit nlsq --help` for the options.", "check": one_line},
    {"name": "method_bogus", "klass": KLASS,
     "make": lambda d: ["--config", "c.yaml", "--method", "bogus"],
     "rc": 2, "needles": ["--method 'bogus' is not allowed", "nlsq, cmc or fit"],
     "fix": "Name a fit: `xpcsfit --config C.yaml --method nlsq` (or cmc, fit), the same as "
            "`xpcsfit nlsq --config C.yaml`.", "check": one_line},
    {"name": "method_missing_value", "klass": KLASS,
     "make": lambda d: ["--config", "c.yaml", "--method"],
     "rc": 2, "needles": ["--method needs a value", "nlsq, cmc or fit"],
     "fix": "Give the fit after --method: `--method nlsq`, `cmc` or `fit`.",
     "check": one_line},
    {"name": "option_before_command", "klass": KLASS,
     "make": lambda d: ["--config", "c.yaml"],
     "rc": 2, "needles": ["'--config' before a command", "--method nlsq|cmc|fit"],
     "fix": "Put the command first (`xpcsfit nlsq --config C.yaml`) or add `--method nlsq`.",
     "check": one_line},
    # issue 33 item 13 (adr/0075): an empty value, a second --out, --resume with --force
    {"name": "option_empty_number", "klass": KLASS,
     "make": lambda d: ["nlsq", "--config", "c.yaml", "--max-iterations", ""],
     "rc": 2, "needles": ["--max-iterations is empty", "xpcsfit nlsq --help"],
     "fix": "Give the option a value (`--max-iterations 200`), or leave the option out for "
            "the config's value.", "check": one_line},
    {"name": "option_empty_threads", "klass": KLASS,
     "make": lambda d: ["batch", "--config", "c.yaml", "--out", "o", "--threads", ""],
     "rc": 2, "needles": ["--threads is empty"],
     "fix": "Give the option a value, or leave it out.", "check": one_line},
    {"name": "option_out_twice", "klass": KLASS,
     "make": lambda d: ["nlsq", "--config", "c.yaml", "--out", "a", "--out", "b"],
     "rc": 2, "needles": ["nlsq: --out is given twice"],
     "fix": "Give --out once: a second one used to win silently.", "check": one_line},
    {"name": "option_out_alias_twice", "klass": KLASS,
     "make": lambda d: ["cmc", "--config", "c.yaml", "--out", "a", "--output-dir", "b"],
     "rc": 2, "needles": ["--out is given twice", "--output-dir is the same option"],
     "fix": "Give the output folder once, as --out or as --output-dir.", "check": one_line},
    {"name": "option_config_twice", "klass": KLASS,
     "make": lambda d: ["validate", "--config", "a.yaml", "--config", "b.yaml"],
     "rc": 2, "needles": ["validate: --config is given twice"],
     "fix": "Give one config; merge what the second held with --set KEY=VALUE.",
     "check": one_line},
    {"name": "option_data_twice", "klass": KLASS,
     "make": lambda d: ["fit", "--config", "c.yaml", "--data", "a.h5", "--data", "b.h5"],
     "rc": 2, "needles": ["fit: --data is given twice"],
     "fix": "Give one data file; `xpcsfit batch` fits several.", "check": one_line},
    {"name": "option_nlsq_result_twice", "klass": KLASS,
     "make": lambda d: ["nlsq", "--config", "c.yaml", "--nlsq-result", "a",
                        "--nlsq-result", "b"],
     "rc": 2, "needles": ["--nlsq-result is given twice"],
     "fix": "Start from one earlier result.", "check": one_line},
    {"name": "cmc_resume_and_force", "klass": KLASS,
     "make": lambda d: ["cmc", "--config", "c.yaml", "--resume", "--force"],
     "rc": 2, "needles": ["cmc: --resume and --force contradict each other"],
     "fix": "Give --resume to keep the finished shards, or --force to redo everything, not "
            "both (the same rule as batch).", "check": one_line},
    {"name": "fit_resume_and_force", "klass": KLASS,
     "make": lambda d: ["fit", "--config", "c.yaml", "--force", "--resume"],
     "rc": 2, "needles": ["fit: --resume and --force contradict each other"],
     "fix": "Give --resume or --force, not both.", "check": one_line},
]
