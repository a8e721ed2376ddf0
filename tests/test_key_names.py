#!/usr/bin/env python3
"""A config key's dotted name is spelled in code once (issue 35, adr/0133): in
src/util/key_names.h, beside its row in the key table. Every XF_KEY_* there names a key of
the table (`xpcsfit config --keys`, produced from the rows), each key once; no string
literal of src/, mpi/ or include/ outside that header spells a table key; no comment
outside the header and the table (src/config/config_table.c) spells a dotted table key
(a comment names the key by its macro: adr/0133 addendum); and the scanners find a
planted one, so the check can fail."""
import os
import re
import subprocess

from tally import check, summary

SRC = os.environ.get("XF_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XF = os.environ["XF_BINARY"]
HEADER = os.path.join("src", "util", "key_names.h")
TABLE = os.path.join("src", "config", "config_table.c")

ref = subprocess.run([XF, "config", "--keys"], capture_output=True, text=True, timeout=60)
check(ref.returncode == 0, f"config --keys: {ref.stderr.strip()}")
KEYS = re.findall(r"^\| `([^`]+)` \|", ref.stdout, re.M)
check(len(KEYS) > 50, f"the key table's keys: {len(KEYS)}")

# comments, then string and character literals, in the order C reads them
TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
SPELLED = re.compile(r"(?<![A-Za-z0-9_.])(" + "|".join(
    re.escape(k) for k in sorted(KEYS, key=len, reverse=True)) + r")(?![A-Za-z0-9_])")


def spelled_keys(text):
    """(line, key) of every table key spelled inside a string literal of C text"""
    found = []
    for m in TOKEN.finditer(text):
        if m.group(0).startswith('"'):
            line = text.count("\n", 0, m.start()) + 1
            found += [(line, k.group(1)) for k in SPELLED.finditer(m.group(0))]
    return found


def commented_keys(text):
    """(line, key) of every dotted table key spelled inside a comment of C text"""
    found = []
    for m in TOKEN.finditer(text):
        if m.group(0).startswith("/"):
            for k in SPELLED.finditer(m.group(0)):
                if "." in k.group(1):
                    line = text.count("\n", 0, m.start() + k.start()) + 1
                    found.append((line, k.group(1)))
    return found


# the scanner itself: a literal spelling a key is found, a comment or a longer name is not
planted = ('/* analyzer_parameters.dt in a comment */\n'
           'xf_warn("x: analyzer_parameters.dt = %g", dt);\n'
           'const char *s = "analyzer_parameters.dt_s"; // analyzer_parameters.dt\n')
check(spelled_keys(planted) == [(2, "analyzer_parameters.dt")],
      f"the scanner finds the planted literal only: {spelled_keys(planted)}")
check(commented_keys(planted) == [(1, "analyzer_parameters.dt"), (3, "analyzer_parameters.dt")],
      f"the comment scanner finds the planted comments only: {commented_keys(planted)}")

# the header: each macro names a table key, each key once
with open(os.path.join(SRC, HEADER), encoding="utf-8") as f:
    macros = re.findall(r'^#define\s+(XF_KEY_\w+)\s+"([^"]+)"', f.read(), re.M)
check(len(macros) >= 20, f"key_names.h defines the keys code spells: {len(macros)}")
for name, key in macros:
    check(key in KEYS, f"{name} names a key of the table: {key}")
values = [k for _, k in macros]
check(len(set(values)) == len(values), "each key has one macro")

# no literal elsewhere spells a key, no comment outside the table spells a dotted one
offences, remarks = [], []
for top in ("src", "mpi", "include"):
    for root, _, files in os.walk(os.path.join(SRC, top)):
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, SRC)
            if not name.endswith((".c", ".h", ".cu")) or rel == HEADER:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            offences += [f"{rel}:{ln}: {k}" for ln, k in spelled_keys(text)]
            if rel != TABLE:
                remarks += [f"{rel}:{ln}: {k}" for ln, k in commented_keys(text)]
check(not offences, "no string literal outside key_names.h spells a config key:\n  "
      + "\n  ".join(offences[:20]))
check(not remarks, "no comment outside key_names.h and config_table.c spells a dotted "
      "config key (name it by its XF_KEY_ macro):\n  " + "\n  ".join(remarks[:20]))

raise SystemExit(summary())
