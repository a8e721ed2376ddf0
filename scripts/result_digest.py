#!/usr/bin/python3
"""result_digest.py — one SHA-256 per result file of xpcsfit result folders, over what the
file says rather than how it was stored: a refactor that changes no number and no word of
a result leaves every digest as it was (issue 35; tests/test_golden_outputs.py).

What is read, per file under each folder (recursively, in name order):
- *.json: the parsed document, timing_s removed (wall seconds differ run to run),
  absolute paths cut to their file name (the checkout's place differs);
- *.h5, *.nc: every group and dataset in name order, each attribute (name, value) and
  each dataset's dtype, shape and values (numbers as stored bytes, strings as text,
  object references by the name of what they point to), paths cut as above;
- run.log and report.html: not digested (they carry wall times and the run's paths),
  nor dot files (.lock holds a process id);
- anything else: its bytes.

Usage: result_digest.py DIR [DIR ...]      prints {"DIR/rel/path": sha256, ...} as JSON
       result_digest.py --diff A B         says, field by field, where two result files
                                           (JSON or HDF5) differ
Environment: none. Needs h5py and numpy (Debian's python3-h5py)."""
import hashlib
import json
import os
import sys

import h5py
import numpy as np

SKIPPED = {"run.log", "report.html"}


def cut_path(s):
    return os.path.basename(s) if isinstance(s, str) and s.startswith("/") else s


def clean_json(o):
    if isinstance(o, dict):
        return {k: clean_json(v) for k, v in o.items() if k != "timing_s"}
    if isinstance(o, list):
        return [clean_json(v) for v in o]
    return cut_path(o)


def text(v):
    return cut_path(v.decode("utf-8", "replace") if isinstance(v, bytes) else v)


def value_repr(h, v):
    """an attribute's or dataset's value as comparable text or bytes"""
    a = np.asarray(v)
    if a.dtype.kind in "OSU":
        flat = []
        for x in a.ravel().tolist():
            if isinstance(x, h5py.Reference):
                flat.append("ref:" + (h[x].name if x else ""))
            else:
                flat.append(text(x))
        return f"{a.dtype.kind}{list(a.shape)}{flat!r}".encode()
    if a.dtype.names:  # compound: field by field
        return repr([(n, value_repr(h, a[n])) for n in a.dtype.names]).encode()
    return f"{a.dtype.str}{list(a.shape)}".encode() + a.tobytes()


def h5_items(path):
    """(name, kind, bytes) for every attribute and dataset, in name order"""
    out = []
    with h5py.File(path, "r") as h:
        names = [""]
        h.visit(names.append)
        for n in sorted(names):
            o = h[n] if n else h
            for k in sorted(o.attrs.keys()):
                try:
                    v = o.attrs[k]
                except (OSError, TypeError):  # a type h5py cannot read: its name only
                    v = "<unreadable>"
                out.append((f"/{n}@{k}", value_repr(h, v)))
            if isinstance(o, h5py.Dataset):
                out.append((f"/{n}", value_repr(h, o[()])))
    return out


def file_digest(path):
    name = os.path.basename(path)
    sha = hashlib.sha256()
    if name.endswith(".json"):
        with open(path) as f:
            sha.update(json.dumps(clean_json(json.load(f))).encode())
    elif name.endswith((".h5", ".nc")):
        for key, b in h5_items(path):
            sha.update(key.encode() + b"\0" + b + b"\0")
    else:
        with open(path, "rb") as f:
            sha.update(f.read())
    return sha.hexdigest()


def folder_digests(root, label=None):
    label = label or os.path.basename(os.path.normpath(root))
    out = {}
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            if f in SKIPPED or f.startswith("."):  # .lock: a pid
                continue
            p = os.path.join(d, f)
            out[os.path.join(label, os.path.relpath(p, root))] = file_digest(p)
    return out


def diff(a, b):
    """print where two result files differ; returns the count"""
    if a.endswith(".json"):
        with open(a) as f, open(b) as g:
            x, y = clean_json(json.load(f)), clean_json(json.load(g))

        def flat(o, p, acc):
            if isinstance(o, dict):
                for k, v in o.items():
                    flat(v, f"{p}/{k}", acc)
            elif isinstance(o, list):
                for i, v in enumerate(o):
                    flat(v, f"{p}[{i}]", acc)
            else:
                acc[p] = o
            return acc

        fx, fy = flat(x, "", {}), flat(y, "", {})
    else:
        fx, fy = dict(h5_items(a)), dict(h5_items(b))
    n = 0
    for k in sorted(set(fx) | set(fy)):
        if fx.get(k) != fy.get(k):
            n += 1
            print(f"{k}: {str(fx.get(k))[:120]} | {str(fy.get(k))[:120]}")
    return n


def main(argv):
    if len(argv) == 3 and argv[0] == "--diff":
        return 1 if diff(argv[1], argv[2]) else 0
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    out = {}
    for d in argv:
        out.update(folder_digests(d))
    print(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
