"""cases_outputs.py — result folders and output paths that cannot be used (adr/0017,
docs/outputs.md "Result folders"): an empty or wrong --out, a folder that cannot be
created, a finished result without --force, a folder another run holds, an incomplete NLSQ
result given to cmc; a file named as an output (config --out, simulate --out) that exists
(refused without --force) or is not a regular file (a device, FIFO, folder or symbolic
link: always refused, the node left as it was; issue 24). One line naming the folder; exit 2 when the command line must change,
1 when the file system refuses. Paths with spaces, non-ASCII names and '%' are no errors:
tests/test_run_dir.py runs them end to end, and the disk-full cases (a private tmpfs)."""
import fcntl
import glob
import os
import resource
import signal
import stat
import subprocess

from corpus import binary, expect_nothing_written

KLASS = "Outputs and paths"
CONFIG = """analysis_mode: static
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.1
  end_frame: 30
  scattering: {{wavevector_q: 0.0054}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {{D_offset: 0}}
"""
HELD = []  # lock files held by this process for the "locked" cases


def config(d, simulate=True):
    """A small static config in d, and its data file when simulate."""
    cfg = os.path.join(d, "c.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=os.path.join(d, "s.h5")))
    if simulate:
        subprocess.run([binary(), "simulate", "--config", cfg, "--phi", "0,90", "--out",
                        os.path.join(d, "s.h5")], check=True, capture_output=True)
    return cfg


def finished(d, method="nlsq"):
    """A folder that holds a finished result (the files a run leaves, no INCOMPLETE)."""
    r = os.path.join(d, "out", method)
    os.makedirs(os.path.join(r, "plots"))
    for name in ("results.h5", "parameters.json", "run.log", "plots/overview.png"):
        with open(os.path.join(r, name), "w") as f:
            f.write("earlier result\n")
    return r


def held(d, method="nlsq"):
    """A folder whose lock this process holds, as a running xpcsfit would."""
    r = os.path.join(d, "out", method)
    os.makedirs(r)
    fd = os.open(os.path.join(r, ".lock"), os.O_RDWR | os.O_CREAT)
    os.write(fd, b"4242\n")
    fcntl.flock(fd, fcntl.LOCK_EX)
    HELD.append(fd)
    return r


def held_by_lockfile(d):
    """A folder held by the lock file of a run on another host (no flock there, adr/0056):
    never judged stale from here."""
    r = os.path.join(d, "out", "nlsq")
    os.makedirs(r)
    with open(os.path.join(r, ".lockfile"), "w") as f:
        f.write("xpcsfit lock file\npid 4242\nhost beamline-node7\n"
                "since 2026-11-27T00:00:00Z\n")
    return r


def lockfile_kept(scratch, rc, out, err):
    r = os.path.join(scratch, "out", "nlsq")
    assert os.path.exists(os.path.join(r, ".lockfile")), "the holder's lock file was removed"
    assert sorted(os.listdir(r)) == [".lockfile"], "written: %s" % os.listdir(r)


def release(scratch, rc, out, err):
    while HELD:
        os.close(HELD.pop())


def untouched(method="nlsq"):
    """The earlier result is still there, byte for byte."""
    def check(scratch, rc, out, err):
        for name in ("results.h5", "parameters.json", "run.log", "plots/overview.png"):
            with open(os.path.join(scratch, "out", method, name)) as f:
                assert f.read() == "earlier result\n", name + " was changed"
    return check


def both(*checks):
    def check(scratch, rc, out, err):
        for c in checks:
            c(scratch, rc, out, err)
    return check


def node(d, kind, name="node"):
    """A device (a char device 1,3 like /dev/null, made here: never the real one), a FIFO,
    or a symbolic link (to an existing file) at d/name; the path."""
    path = os.path.join(d, name)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        write_file(os.path.join(d, "target.txt"), "the link's target\n")
        os.symlink("target.txt", path)
    elif kind == "device":
        try:
            os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:  # not root: a real device, which cannot be replaced then
            return "/dev/null"
    return path


def still(kind, name="node"):
    """A check: the node is still what it was (not replaced by a regular file)."""
    test = {"fifo": stat.S_ISFIFO, "device": stat.S_ISCHR, "link": stat.S_ISLNK}[kind]

    def check(scratch, rc, out, err):
        path = os.path.join(scratch, name)
        if kind == "device" and not os.path.lexists(path):
            path = "/dev/null"
        assert test(os.lstat(path).st_mode), "%s was replaced" % path
        if kind == "link":
            with open(os.path.join(scratch, "target.txt")) as f:
                assert f.read() == "the link's target\n", "the link's target was changed"
        left = [f for f in os.listdir(scratch) if ".tmp." in f]
        assert not left, "temporary files left: %s" % left
    return check


MINE = "# my own config, edited by hand\n"


def existing(d, name):
    return write_file(os.path.join(d, name), MINE)


def kept_then_forced(name, args, is_result):
    """A check: the existing file is untouched; the same command with --force replaces it."""
    def check(scratch, rc, out, err):
        path = os.path.join(scratch, name)
        with open(path) as f:
            assert f.read() == MINE, name + " was changed without --force"
        r = subprocess.run([binary(), *args(scratch), "--force"], capture_output=True,
                           text=True, cwd=scratch)
        assert r.returncode == 0, "with --force: exit %d %s" % (r.returncode, r.stderr)
        with open(path, "rb") as f:
            assert is_result(f.read()), name + " not replaced with --force"
    return check


def config_out(d, name="node"):
    return ["config", "--mode", "static", "--out", os.path.join(d, name)]


def simulate_out(d, name="node"):
    return ["simulate", "--config", config(d, False), "--phi", "0", "--out",
            os.path.join(d, name)]


def node_case(command, kind):
    make_args = config_out if command == "config" else simulate_out

    def make(d):
        path = node(d, kind)
        args = make_args(d)
        return args[:-1] + [path]
    return {"name": "%s_out_%s" % (command, kind), "klass": KLASS, "make": make, "rc": 2,
            "needles": ["--out names %s" % {"device": "a device", "fifo": "a FIFO",
                                            "link": "a symbolic link"}[kind]],
            "fix": {"device": "Give %s --out the name of a file: a device is never written "
                              "(nor replaced by a file)." % command,
                    "fifo": "Give %s --out the name of a file: a FIFO is never written "
                            "(it would block) nor replaced." % command,
                    "link": "Give %s --out the file's own name: writing through a symbolic "
                            "link would replace the link, not its target." % command}[kind],
            "check": still(kind), "timeout": 20}


def nlsq(d, *extra):
    return ["nlsq", "--config", config(d), "--out", os.path.join(d, "out"), *extra]


def write_file(path, text="x\n"):
    with open(path, "w") as f:
        f.write(text)
    return path


def incomplete_nlsq(d):
    cfg = config(d)
    r = finished(d)
    write_file(os.path.join(r, "INCOMPLETE"), "xpcsfit nlsq (pid 1) started writing\n")
    return ["cmc", "--config", cfg, "--nlsq", r, "--out", os.path.join(d, "cmc_out")]


def nlsq_start_edited(value):
    """A finished NLSQ result (a real fit) whose parameters.json then says D0 = value;
    `cmc --nlsq` used to run for 35 s on it and fail with an unrelated R-hat reason."""
    def make(d):
        import json
        cfg = config(d)
        r = os.path.join(d, "n")
        subprocess.run([binary(), "nlsq", "--config", cfg, "--out", r, "--no-plots",
                        "--threads", "1"], check=True, capture_output=True)
        path = os.path.join(r, "nlsq", "parameters.json")
        with open(path) as f:
            p = json.load(f)
        p["parameters"]["D0"]["value"] = value
        with open(path, "w") as f:
            json.dump(p, f)
        return ["cmc", "--config", cfg, "--nlsq", r, "--out", os.path.join(d, "cmc_out")]
    return make


# No file may grow past this (ulimit -f): results.h5 and parameters.json of the small run
# below fit, a PNG page (about 60 KB) does not: a disk that fills while the plots are
# written, made repeatable without a tmpfs or root.
PLOT_ROOM_BYTES = 30000


def no_room_for_plots():
    """In the child before exec: the file size limit, and SIGXFSZ ignored so that a write
    past it fails (EFBIG) as on a full disk instead of killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (PLOT_ROOM_BYTES, PLOT_ROOM_BYTES))


def redraw(d):
    """A finished result of one angle without plots (one page: the same page fails
    whatever the cores); the case redraws them (`xpcsfit plot DIR`)."""
    cfg = config(d, simulate=False)
    r = os.path.join(d, "out")
    subprocess.run([binary(), "simulate", "--config", cfg, "--phi", "0", "--out",
                    os.path.join(d, "s.h5")], check=True, capture_output=True)
    subprocess.run([binary(), "nlsq", "--config", cfg, "--out", r, "--no-plots"],
                   check=True, capture_output=True)
    return ["plot", os.path.join(r, "nlsq")]


def without_surfaces(data):
    """A finished result without surfaces (the default), whose data file is then removed
    ("gone") or replaced by one of other angles ("other", given with --data): `xpcsfit
    plot DIR` cannot recompute the maps (adr/0059)."""
    def make(d):
        cfg = config(d)
        r = os.path.join(d, "out")
        subprocess.run([binary(), "nlsq", "--config", cfg, "--out", r, "--no-plots"],
                       check=True, capture_output=True)
        if data == "gone":
            os.remove(os.path.join(d, "s.h5"))
            return ["plot", os.path.join(r, "nlsq")]
        other = os.path.join(d, "other.h5")
        subprocess.run([binary(), "simulate", "--config", cfg, "--phi", "0,45", "--out",
                        other], check=True, capture_output=True)
        return ["plot", os.path.join(r, "nlsq"), "--data", other]
    return make


def joint_without_surfaces(data):
    """A finished joint fit over two rings (q 0.0054, 0.008; adr/0068) without plots, then
    redrawn with --data a file that lacks ring 0.008 ("ring") or holds other angles
    ("angles"): `xpcsfit plot DIR/nlsq_joint` cannot reload every ring's window."""
    def make(d):
        cfg = config(d, simulate=False)
        with open(cfg) as f:
            text = f.read().replace("wavevector_q: 0.0054", "wavevector_q: all")
        with open(cfg, "w") as f:
            f.write(text)
        subprocess.run([binary(), "simulate", "--config", cfg, "--phi", "0,90", "--q",
                        "0.0054,0.008", "--out", os.path.join(d, "s.h5")], check=True,
                       capture_output=True)
        r = os.path.join(d, "out")
        subprocess.run([binary(), "nlsq", "--config", cfg, "--out", r, "--joint",
                        "--no-plots"], check=True, capture_output=True)
        other = os.path.join(d, "other.h5")
        rings, phi = ("0.0054", "0,90") if data == "ring" else ("0.0054,0.008", "0,45")
        subprocess.run([binary(), "simulate", "--config", cfg, "--phi", phi, "--q", rings,
                        "--out", other], check=True, capture_output=True)
        return ["plot", os.path.join(r, "nlsq_joint"), "--data", other]
    return make


def no_joint_plots_dir(scratch, rc, out, err):
    assert not os.path.exists(os.path.join(scratch, "out", "nlsq_joint", "plots")), \
        "plots/ made"


def no_plots_dir(scratch, rc, out, err):
    assert not os.path.exists(os.path.join(scratch, "out", "nlsq", "plots")), "plots/ made"


def no_plot_written(scratch, rc, out, err):
    """Neither a PNG under its final name nor a temporary left, and no library line."""
    left = glob.glob(os.path.join(scratch, "out", "nlsq", "plots", "*"))
    assert not left, "plot files left: %s" % left
    assert "libpng" not in err and "write failed" not in err, err


CASES = [
    {"name": "out_empty", "klass": KLASS,
     "make": lambda d: ["nlsq", "--config", config(d, False), "--out", ""],
     "rc": 2, "needles": ["--out is empty"],
     "fix": "Give --out a folder name (it defaults to ./xpcsfit_results when left out).",
     "check": expect_nothing_written(".")},
    {"name": "out_is_file", "klass": KLASS,
     "make": lambda d: ["nlsq", "--config", config(d, False), "--out",
                        write_file(os.path.join(d, "notes.txt"))],
     "rc": 2, "needles": ["is a file, not a folder", "notes.txt"],
     "fix": "--out names the folder that receives nlsq/ and cmc/: choose a folder, not a file."},
    {"name": "out_under_file", "klass": KLASS,
     "make": lambda d: ["nlsq", "--config", config(d, False), "--out",
                        write_file(os.path.join(d, "notes.txt")) + "/run1"],
     "rc": 2, "needles": ["is a file, not a folder", "notes.txt"],
     "fix": "A part of the --out path is a file: choose a path made of folders."},
    {"name": "out_cannot_create", "klass": KLASS,
     "make": lambda d: nlsq(d)[:-1] + ["/proc/xpcsfit_results"],
     "rc": 1, "needles": ["cannot create folder", "/proc/xpcsfit_results"],
     "fix": "Choose an --out on a file system you can write to (check permissions, "
            "read-only mounts).",
     "check": expect_nothing_written(".")},
    {"name": "result_exists", "klass": KLASS,
     "make": lambda d: (finished(d), nlsq(d))[1],
     "rc": 2, "needles": ["already holds a finished result", "--force", "out/nlsq"],
     "fix": "Add --force to replace the earlier result (its files are removed first), or "
            "choose another --out.",
     "check": untouched()},
    {"name": "result_locked", "klass": KLASS,
     "make": lambda d: (held(d), nlsq(d, "--force"))[1],
     "rc": 2, "needles": ["another xpcsfit run (pid 4242)", "out/nlsq"],
     "fix": "Another run is writing this folder (it holds out/nlsq/.lock): wait for it "
            "to end or choose another --out. --force does not override a live run.",
     "check": both(release, expect_nothing_written("out"))},
    {"name": "result_lockfile_held", "klass": KLASS,
     "make": lambda d: (held_by_lockfile(d), nlsq(d, "--force"))[1],
     "rc": 2, "needles": ["another xpcsfit run (pid 4242 on host beamline-node7",
                          "remove", "out/nlsq/.lockfile"],
     "fix": "A run on another host holds the folder by its lock file (a filesystem without "
            "flock, adr/0056): wait for it to end, or remove out/nlsq/.lockfile if that run "
            "is gone (killed, node lost).",
     "check": lockfile_kept},
    {"name": "cmc_result_exists", "klass": KLASS,
     "make": lambda d: (finished(d, "cmc"),
                        ["cmc", "--config", config(d, False), "--out",
                         os.path.join(d, "out")])[1],
     "rc": 2, "needles": ["already holds a finished result", "--force (or --resume)",
                          "out/cmc"],
     "fix": "Add --force to sample again from scratch, or --resume to reuse the finished "
            "shards; both replace the earlier result files.",
     "check": untouched("cmc")},
    {"name": "fit_nlsq_result_exists", "klass": KLASS,
     "make": lambda d: (finished(d, "nlsq"),
                        ["fit", "--config", config(d, False), "--out",
                         os.path.join(d, "out")])[1],
     "rc": 2, "needles": ["already holds a finished result", "out/nlsq"],
     "fix": "fit writes out/nlsq/ and out/cmc/: add --force (or --resume) to replace "
            "their earlier results.",
     "check": untouched("nlsq")},
    {"name": "cmc_nlsq_incomplete", "klass": KLASS,
     "make": incomplete_nlsq,
     "rc": 1, "needles": ["NLSQ result is incomplete", "INCOMPLETE", "out/nlsq"],
     "fix": "The NLSQ run that wrote that folder did not finish: rerun nlsq with --force, "
            "then cmc.",
     "check": expect_nothing_written("cmc_out")},
    {"name": "cmc_nlsq_value_not_a_number", "klass": KLASS,
     "make": nlsq_start_edited("abc"),
     "rc": 2, "needles": ["n/nlsq/parameters.json", "parameters.D0.value \"abc\" is not a "
                          "finite number"],
     "fix": "The NLSQ result was edited or damaged: fit it again (`xpcsfit nlsq`).",
     "check": expect_nothing_written("cmc_out")},
    {"name": "cmc_nlsq_value_outside_bounds", "klass": KLASS,
     "make": nlsq_start_edited(1e7),
     "rc": 2, "needles": ["n/nlsq/parameters.json has D0 = 10000000 outside this config's "
                          "bounds"],
     "fix": "Fit NLSQ again with this config (its bounds), or widen "
            "parameter_space.bounds to hold the earlier result.",
     "check": expect_nothing_written("cmc_out")},
    {"name": "plot_dir_locked", "klass": KLASS,
     "make": lambda d: (finished(d), held(d, "busy"), ["plot", os.path.join(d, "out", "busy")])[2],
     "rc": 2, "needles": ["another xpcsfit run", "out/busy"],
     "fix": "Wait for the run writing that folder to end, then redraw its plots.",
     "check": release},
    {"name": "plot_dir_missing", "klass": KLASS,
     "make": lambda d: ["plot", os.path.join(d, "nowhere")],
     "rc": 1, "needles": ["no such result folder", "nowhere"],
     "fix": "Give xpcsfit plot a result folder: a run's --out folder or its nlsq/."},
    {"name": "plot_dir_results_fifo", "klass": KLASS,
     "make": lambda d: (finished(d), os.unlink(os.path.join(d, "out", "nlsq", "results.h5")),
                        os.mkfifo(os.path.join(d, "out", "nlsq", "results.h5")),
                        ["plot", os.path.join(d, "out", "nlsq")])[3],
     "timeout": 20, "rc": 1,
     "needles": ["results.h5 is not a regular file (a FIFO)", "out/nlsq/results.h5"],
     "fix": "Something else sits where the result's results.h5 was (a FIFO would block the "
            "read; it is never opened): rerun the fit into that folder with --force "
            "(adr/0071)."},
    {"name": "nlsq_resume", "klass": KLASS,
     "make": lambda d: nlsq(d, "--resume"),
     "rc": 2, "needles": ["unknown or incomplete option", "--resume"],
     "fix": "Only cmc and fit resume (from their shards); rerun nlsq with --force."},
    {"name": "simulate_out_empty", "klass": KLASS,
     "make": lambda d: ["simulate", "--config", config(d, False), "--phi", "0", "--out", ""],
     "rc": 2, "needles": ["--out"],
     "fix": "Give simulate --out the name of the HDF5 file to write."},
    {"name": "simulate_out_is_folder", "klass": KLASS,
     "make": lambda d: ["simulate", "--config", config(d, False), "--phi", "0", "--out", d],
     "rc": 2, "needles": ["--out is a folder"],
     "fix": "Give simulate --out a file name, not a folder."},
    {"name": "config_out_is_folder", "klass": KLASS,
     "make": lambda d: ["config", "--mode", "static", "--out", d],
     "rc": 2, "needles": ["--out is a folder"],
     "fix": "Give config --out a file name (or leave it out to print to standard output)."},
    {"name": "plot_disk_full", "klass": KLASS,
     "make": redraw, "preexec": no_room_for_plots,
     "rc": 1, "needles": ["cannot write plot", "File too large", "c2_phi_000"],
     "fix": "Free space on the disk of the result folder (or raise the file size limit, "
            "`ulimit -f`), then run `xpcsfit plot DIR` again.",
     "check": no_plot_written},
    {"name": "plot_data_gone", "klass": KLASS,
     "make": without_surfaces("gone"),
     "rc": 1, "needles": ["no c2 surfaces", "s.h5", "--data FILE.h5", "results.h5"],
     "fix": "Name the data file the result was fitted to with `xpcsfit plot DIR --data "
            "FILE.h5` (it moved), or rerun the fit with --surfaces to keep the maps in "
            "results.h5.",
     "check": no_plots_dir},
    {"name": "plot_data_other_window", "klass": KLASS,
     "make": without_surfaces("other"),
     "rc": 1, "needles": ["does not hold the fitted window", "other.h5"],
     "fix": "Give --data the file the result was fitted to (the same angles, frames and "
            "q ring).",
     "check": no_plots_dir},
    {"name": "plot_joint_data_lacks_ring", "klass": KLASS,
     "make": joint_without_surfaces("ring"),
     "rc": 1, "needles": ["does not hold the fitted window of ring q 0.008", "other.h5"],
     "fix": "Give --data the file the joint fit was fitted to (every ring, the same "
            "angles, frames and q).",
     "check": no_joint_plots_dir},
    {"name": "plot_joint_data_other_angles", "klass": KLASS,
     "make": joint_without_surfaces("angles"),
     "rc": 1, "needles": ["does not hold the fitted window", "other.h5"],
     "fix": "Give --data the file the joint fit was fitted to (every ring, the same "
            "angles, frames and q).",
     "check": no_joint_plots_dir},
    {"name": "config_out_exists", "klass": KLASS,
     "make": lambda d: (existing(d, "mine.yaml"), config_out(d, "mine.yaml"))[1],
     "rc": 2, "needles": ["--out names a file that already exists", "--force", "mine.yaml"],
     "fix": "Add --force to replace the file (written atomically), or choose another name.",
     "check": kept_then_forced("mine.yaml", lambda d: config_out(d, "mine.yaml"),
                               lambda b: b.startswith(b"#") and b"analysis_mode" in b)},
    {"name": "simulate_out_exists", "klass": KLASS,
     "make": lambda d: (existing(d, "measured.h5"), simulate_out(d, "measured.h5"))[1],
     "rc": 2, "needles": ["--out names a file that already exists", "--force", "measured.h5"],
     "fix": "Add --force to replace the file (a measured data file is never replaced "
            "without it), or choose another name.",
     "check": kept_then_forced("measured.h5", lambda d: simulate_out(d, "measured.h5"),
                               lambda b: b.startswith(b"\x89HDF"))},
] + [node_case(c, k) for c in ("config", "simulate") for k in ("device", "fifo", "link")]
