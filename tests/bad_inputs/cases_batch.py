"""cases_batch.py — `xpcsfit batch` command lines, lists and override tables that cannot be
used (docs/cli.md "batch", adr/0023): each is refused with exit 2 and one line (naming
file:line for a list or CSV) before any file runs, so nothing that looks like a result is
written. A bad or missing data file is no batch error: it fails alone (exit 1, its line
prefixed with the file), the others run (tests/test_batch.py runs that end to end).
A --list or --overrides file is read as a config is (issue 24): a device (/dev/zero), a
FIFO, a file above 64 MiB or one holding a NUL byte is refused unread, never waited on."""
import os
import stat
import subprocess

from corpus import binary, expect_nothing_written

KLASS = "Batch runs"
CONFIG = """analysis_mode: static
analyzer_parameters:
  dt: 0.1
  end_frame: 30
  scattering: {wavevector_q: 0.0054}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {D_offset: 0}
"""


def config(d, text=CONFIG):
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write(text)
    return cfg


def data(d, name="a.h5"):
    path = os.path.join(d, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    subprocess.run([binary(), "simulate", "--config", config(d), "--phi", "0,90", "--out",
                    path], check=True, capture_output=True)
    return path


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def batch(d, *extra, files=("a.h5",)):
    paths = [data(d, f) for f in files]
    return ["batch", "--config", config(d), "--out", os.path.join(d, "out"), *paths, *extra]


def config_nul(d):
    """The batch's arguments, then its config given a NUL byte on line 2."""
    args = batch(d)
    with open(os.path.join(d, "c.yaml"), "wb") as f:
        f.write(b"analysis_mode: static\n#\0\n")
    return args


def with_csv(text):
    return lambda d: batch(d, "--overrides", write(d, "o.csv", text), files=("a.h5", "b.h5"))


def text_file(kind, name):
    """A make() giving --list or --overrides (name) a file of that kind: /dev/zero (read
    only, never written), a FIFO with no writer, a sparse 65 MiB file, a NUL on line 2."""
    option = "--list" if name == "inputs.txt" else "--overrides"

    def make(d):
        path = os.path.join(d, name)
        if kind == "zero":
            path = "/dev/zero"
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "huge":
            with open(path, "wb") as f:
                f.truncate(65 << 20)
        elif kind == "nul":
            text = "a.h5\nb.h5\0.junk\n" if option == "--list" else "file,dt\na\0x,0.2\n"
            write(d, name, text)
        return batch(d, option, path)
    return make


def fifo_kept(name):
    def check(scratch, rc, out, err):
        NOTHING(scratch, rc, out, err)
        assert stat.S_ISFIFO(os.lstat(os.path.join(scratch, name)).st_mode), "FIFO replaced"
    return check


def finished(d):
    r = os.path.join(d, "out", "a", "nlsq")
    os.makedirs(r)
    for name in ("results.h5", "parameters.json", "run.log"):
        write(r, name, "earlier result\n")
    return batch(d)


NOTHING = expect_nothing_written("out")


def nothing_at(d, name):
    """No record, no summary: not even the folder (a refusal before the batch starts)."""
    assert not os.path.exists(os.path.join(d, name)), "%s written" % name

CASES = [
    {"name": "batch_no_inputs", "klass": KLASS,
     "make": lambda d: ["batch", "--config", config(d), "--out", os.path.join(d, "out")],
     "rc": 2, "needles": ["no input files"],
     "fix": "Name the HDF5 files after the options, or give --list FILE.", "check": NOTHING},
    {"name": "batch_no_out", "klass": KLASS,
     "make": lambda d: ["batch", "--config", config(d), os.path.join(d, "a.h5")],
     "rc": 2, "needles": ["--out is required"],
     "fix": "Give --out DIR: each file's results go to DIR/<name>/."},
    {"name": "batch_out_is_file", "klass": KLASS,
     "make": lambda d: ["batch", "--config", config(d), "--out", write(d, "out", "x\n"),
                        data(d)],
     "rc": 2, "needles": ["is a file, not a folder", "out"],
     "fix": "--out names the folder that receives one folder per input: choose a folder."},
    {"name": "batch_bad_method", "klass": KLASS,
     "make": lambda d: batch(d, "--method", "mcmc"),
     "rc": 2, "needles": ["--method", "'mcmc'", "nlsq, cmc or fit"],
     "fix": "Use --method nlsq (default), cmc or fit.", "check": NOTHING},
    {"name": "batch_resume_and_force", "klass": KLASS,
     "make": lambda d: batch(d, "--resume", "--force"),
     "rc": 2, "needles": ["--resume and --force"],
     "fix": "Give --resume to keep complete results, or --force to redo them, not both.",
     "check": NOTHING},
    {"name": "batch_task_alone", "klass": KLASS,
     "make": lambda d: batch(d, "--task", "0"),
     "rc": 2, "needles": ["--task and --tasks go together"],
     "fix": "Give both --task K and --tasks N (K from 0 to N-1).", "check": NOTHING},
    {"name": "batch_task_out_of_range", "klass": KLASS,
     "make": lambda d: batch(d, "--task", "3", "--tasks", "3"),
     "rc": 2, "needles": ["--task: 3", "0 to 2"],
     "fix": "--task counts from 0: with --tasks N it is 0 to N-1 (SLURM_ARRAY_TASK_ID "
            "with --array=0-(N-1)).", "check": NOTHING},
    {"name": "batch_max_runs_negative", "klass": KLASS,
     "make": lambda d: batch(d, "--max-runs", "-1"),
     "rc": 2, "needles": ["--max-runs: '-1' is not allowed", "from 0"],
     "fix": "--max-runs N is how many files this process may fit (0: only rewrite the "
            "summary); leave it out for no cap.", "check": NOTHING},
    {"name": "batch_duplicate_names", "klass": KLASS,
     "make": lambda d: batch(d, files=("a.h5", "sub/a.h5")),
     "rc": 2, "needles": ["share the result folder 'a'", "a.h5", "sub/a.h5"],
     "fix": "Two inputs have the same file name (stem): rename one, or run them in two "
            "batches with different --out.", "check": NOTHING},
    {"name": "batch_list_missing", "klass": KLASS,
     "make": lambda d: batch(d, "--list", os.path.join(d, "inputs.txt")),
     "rc": 2, "needles": ["--list", "inputs.txt"],
     "fix": "Give --list the path of an existing text file, one input path a line.",
     "check": NOTHING},
    {"name": "batch_bad_config", "klass": KLASS,
     "make": lambda d: (batch(d), config(d, CONFIG.replace("dt: 0.1", "dt: -1")))[0],
     "rc": 2, "needles": ["analyzer_parameters.dt", "'-1'", "c.yaml:3"],
     "fix": "Fix the config: a config error stops the batch before any file runs.",
     "check": NOTHING},
    {"name": "batch_config_nul", "klass": KLASS, "make": config_nul,
     "rc": 2, "needles": ["config file holds a NUL byte (not text)", "c.yaml:2"],
     "fix": "Remove the NUL byte from the config: the batch reads it once, before any file.",
     "check": NOTHING},
    {"name": "batch_result_exists", "klass": KLASS,
     "make": finished,
     "rc": 2, "needles": ["already holds a finished result", "--resume or --force", "out/a/nlsq"],
     "fix": "Add --resume to keep complete results and run the rest, or --force to redo "
            "every file."},
    {"name": "batch_device_env", "klass": KLASS, "make": lambda d: batch(d),
     "env": {"XPCSFIT_DEVICE": "bogus"},
     "rc": 2, "needles": ["XPCSFIT_DEVICE='bogus'", "expected cpu, gpu or auto"],
     "fix": "Set XPCSFIT_DEVICE to cpu, gpu or auto (or unset it): it is refused once, "
            "before any file runs or a record or summary is written.",
     "check": lambda d, rc, out, err: (NOTHING(d, rc, out, err), nothing_at(d, "out"))},
    {"name": "batch_csv_missing", "klass": KLASS,
     "make": lambda d: batch(d, "--overrides", os.path.join(d, "o.csv")),
     "rc": 2, "needles": ["cannot open --overrides file", "o.csv"],
     "fix": "Give --overrides the path of an existing CSV file.", "check": NOTHING},
    {"name": "batch_list_device", "klass": KLASS, "make": text_file("zero", "inputs.txt"),
     "timeout": 20, "rc": 2, "needles": ["--list file is not a regular file (a device)",
                                         "/dev/zero"],
     "fix": "Give --list a text file; devices are refused unread (/dev/zero would never "
            "end).", "check": NOTHING},
    {"name": "batch_list_fifo", "klass": KLASS, "make": text_file("fifo", "inputs.txt"),
     "timeout": 20, "rc": 2, "needles": ["--list file is not a regular file (a FIFO)",
                                         "inputs.txt"],
     "fix": "Write the list to a regular file; pipes are refused unread (they would block).",
     "check": fifo_kept("inputs.txt")},
    {"name": "batch_list_too_big", "klass": KLASS, "make": text_file("huge", "inputs.txt"),
     "rc": 2, "needles": ["--list file is 68157440 bytes, above the limit of 64 MiB"],
     "fix": "A list is one path a line: split a list above 64 MiB.", "check": NOTHING},
    {"name": "batch_list_nul", "klass": KLASS, "make": text_file("nul", "inputs.txt"),
     "rc": 2, "needles": ["--list file holds a NUL byte", "inputs.txt:2"],
     "fix": "Remove the NUL byte: a path cut at it would name another file.",
     "check": NOTHING},
    {"name": "batch_csv_device", "klass": KLASS, "make": text_file("zero", "o.csv"),
     "timeout": 20, "rc": 2, "needles": ["--overrides file is not a regular file (a device)",
                                         "/dev/zero"],
     "fix": "Give --overrides a CSV file; devices are refused unread.", "check": NOTHING},
    {"name": "batch_csv_fifo", "klass": KLASS, "make": text_file("fifo", "o.csv"),
     "timeout": 20, "rc": 2, "needles": ["--overrides file is not a regular file (a FIFO)",
                                         "o.csv"],
     "fix": "Write the CSV to a regular file; pipes are refused unread (they would block).",
     "check": fifo_kept("o.csv")},
    {"name": "batch_csv_nul", "klass": KLASS, "make": text_file("nul", "o.csv"),
     "rc": 2, "needles": ["--overrides file holds a NUL byte", "o.csv:2"],
     "fix": "Remove the NUL byte from the CSV.", "check": NOTHING},
    {"name": "batch_input_fifo", "klass": KLASS,
     "make": lambda d: (os.mkfifo(os.path.join(d, "f.h5")),
                        ["batch", "--config", config(d), "--out", os.path.join(d, "out"),
                         os.path.join(d, "f.h5"), "--no-plots"])[1],
     "timeout": 20, "rc": 1, "needles": ["f.h5: data file is not a regular file"],
     "fix": "Copy the data to a regular file: a FIFO input fails alone, unread (its "
            "fingerprint is not read either), and the other inputs run.",
     "check": fifo_kept("f.h5")},
    {"name": "batch_input_device", "klass": KLASS,
     "make": lambda d: ["batch", "--config", config(d), "--out", os.path.join(d, "out"),
                        "/dev/zero", "--no-plots"],
     "timeout": 20, "rc": 1, "needles": ["/dev/zero: data file is not a regular file"],
     "fix": "Give batch HDF5 files: a device input fails alone, unread.", "check": NOTHING},
    {"name": "batch_csv_header", "klass": KLASS,
     "make": with_csv("path,dt\na.h5,0.2\n"),
     "rc": 2, "needles": ["header must be 'file'", "o.csv:1"],
     "fix": "Start the CSV with a header line: file, then one column per config key.",
     "check": NOTHING},
    {"name": "batch_csv_bad_value", "klass": KLASS,
     "make": with_csv("file,dt\na.h5,0.2\nb.h5,fast\n"),
     "rc": 2, "needles": ["analyzer_parameters.dt", "'fast'", "o.csv:3, column dt"],
     "fix": "Give the value the config key takes (here a number of seconds); the same "
            "checks as in the YAML file apply.", "check": NOTHING},
    {"name": "batch_csv_out_of_range", "klass": KLASS,
     "make": with_csv("file,q\na,-0.1\n"),
     "rc": 2, "needles": ["wavevector_q", "'-0.1'", "o.csv:2, column q"],
     "fix": "q is the wavevector in 1/A that picks the q ring: a number > 0.",
     "check": NOTHING},
    {"name": "batch_csv_unknown_key", "klass": KLASS,
     "make": with_csv("file,analyzer_parameters.frame_time\na.h5,0.2\n"),
     "rc": 2, "needles": ["unknown config key", "frame_time", "o.csv:2"],
     "fix": "Use a key the config reader knows (docs/config.md), or the aliases dt and q.",
     "check": NOTHING},
    {"name": "batch_csv_unused_key", "klass": KLASS,
     "make": with_csv("file,output.formats\na.h5,x\n"),
     "rc": 2, "needles": ["not used by xpcsfit", "o.csv:2, column output.formats"],
     "fix": "That section is accepted for homodyne configs but not read: overriding it "
            "would change nothing.", "check": NOTHING},
    {"name": "batch_csv_section", "klass": KLASS,
     "make": with_csv("file,analyzer_parameters.scattering\na.h5,0.005\n"),
     "rc": 2, "needles": ["a section there", "o.csv:2, column analyzer_parameters.scattering"],
     "fix": "Name the key inside the section (analyzer_parameters.scattering.wavevector_q, "
            "or q).", "check": NOTHING},
    {"name": "batch_csv_no_input", "klass": KLASS,
     "make": with_csv("file,dt\nc.h5,0.2\n"),
     "rc": 2, "needles": ["'c.h5' names none of the input files", "o.csv:2"],
     "fix": "Each row must name an input of this batch, by its path or its name (stem).",
     "check": NOTHING},
    {"name": "batch_csv_second_row", "klass": KLASS,
     "make": with_csv("file,dt\na.h5,0.2\na,0.3\n"),
     "rc": 2, "needles": ["a second row for", "line 2", "o.csv:3"],
     "fix": "Give one row per input file.", "check": NOTHING},
    {"name": "batch_csv_cells", "klass": KLASS,
     "make": with_csv("file,dt\na.h5,0.2,0.3\n"),
     "rc": 2, "needles": ["3 cells where the header has 2", "o.csv:2"],
     "fix": "Give every row as many cells as the header (an empty cell keeps the config's "
            "value).", "check": NOTHING},
    {"name": "batch_csv_quote", "klass": KLASS,
     "make": with_csv("file,dt\n\"a.h5,0.2\n"),
     "rc": 2, "needles": ["quoted cell is not closed", "o.csv:2"],
     "fix": "Close the quote on the same line (a cell cannot span lines).", "check": NOTHING},
    {"name": "batch_csv_same_key", "klass": KLASS,
     "make": with_csv("file,dt,analyzer_parameters.dt\na.h5,0.2,0.3\n"),
     "rc": 2, "needles": ["set the same key", "o.csv:1"],
     "fix": "dt is analyzer_parameters.dt: keep one of the two columns.", "check": NOTHING},
]
