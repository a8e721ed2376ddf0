"""cases_gpu.py — a file that is no CUDA module (docs/gpu.md "How the module is found",
adr/0072): a FIFO, a folder, the first 4 KB of a shared object, named by
XPCSFIT_CUDA_MODULE. Checked before dlopen(), which would block on the FIFO forever and
SIGBUS on the truncated copy: `--device gpu` is one line naming the file and what is
wrong, exit 2, before the config is read and before any folder. The name is bare, so it
is also the rule that a bare name is a file of the current folder (./NAME)."""
import os
import struct

from corpus import binary, expect_nothing_written

KLASS = "GPU module"
FIT = ["nlsq", "--config", "cfg.yaml", "--out", "out", "--device", "gpu"]


def module(kind):
    def make(d):
        path = os.path.join(d, "mod.so")
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            os.mkdir(path)
        else:  # the first 4 KB of a module whose one loadable segment is 16 KB long
            with open(binary(), "rb") as src:
                ident, machine = src.read(16), src.read(4)[2:4]  # this host's ELF kind
            order = "<" if ident[5] == 1 else ">"
            head = ident + struct.pack(order + "H", 3) + machine + struct.pack(
                order + "IQQQIHHHHHH", 1, 0, 64, 0, 0, 64, 56, 1, 64, 0, 0)
            load = struct.pack(order + "IIQQQQQQ", 1, 5, 0, 0, 0, 16384, 16384, 4096)
            with open(path, "wb") as f:
                f.write((head + load).ljust(4096, b"\0"))
        return FIT
    return make


ENV = {"XPCSFIT_CUDA_MODULE": "mod.so", "XPCSFIT_DEVICE": ""}
CASES = [
    {"name": "gpu_module_fifo", "klass": KLASS, "make": module("fifo"), "env": ENV,
     "timeout": 30, "rc": 2,
     "needles": ["--device gpu: the CUDA module ./mod.so cannot be loaded",
                 "a FIFO, not a regular file"],
     "fix": "Name the module file itself (a link to it is fine); pipes, folders and devices "
            "are refused unopened.", "check": expect_nothing_written()},
    {"name": "gpu_module_folder", "klass": KLASS, "make": module("folder"), "env": ENV,
     "timeout": 30, "rc": 2,
     "needles": ["the CUDA module ./mod.so cannot be loaded", "a folder, not a regular file"],
     "fix": "Name the file libxpcsfit-cuda.so, not the folder that holds it.",
     "check": expect_nothing_written()},
    {"name": "gpu_module_truncated", "klass": KLASS, "make": module("cut"), "env": ENV,
     "timeout": 30, "rc": 2,
     "needles": ["the CUDA module ./mod.so cannot be loaded", "it is truncated (4096 bytes"],
     "fix": "Copy or install the module again: the file is shorter than its own headers say "
            "(an interrupted copy).", "check": expect_nothing_written()},
]
