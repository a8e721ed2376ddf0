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
]
