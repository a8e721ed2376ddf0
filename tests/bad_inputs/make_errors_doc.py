"""make_errors_doc.py — write docs/errors.md from the bad-input corpus: each case is run
and its actual error line goes into the table (case → message → exit code → what to do).

  XF_BINARY=build/xpcsfit /usr/bin/python3 tests/bad_inputs/make_errors_doc.py
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from corpus import all_cases, error_lines, generic, run_case  # noqa: E402

HEAD = """# Errors: what xpcsfit says, and what to do

Every error is one line on stderr, `xpcsfit: error: <what>, <where>`, and an exit code:
1 when the run or the data failed, 2 for a usage or config error, 130 when interrupted
(Ctrl-C, SIGINT), 143 when terminated (SIGTERM). Nothing that looks like a result is left
behind (see docs/cli.md, "Result directory").

The table below is written from the test corpus (tests/bad_inputs/, run by `make test`):
each row is a case that is run on every test, with the line it printed then.
Paths are shown relative to the case's folder.
"""


def main():
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    out_path = os.path.join(repo, "docs", "errors.md")
    cases = all_cases()
    parts = [HEAD]
    klass = None
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            if case["klass"] != klass:
                klass = case["klass"]
                parts.append("\n## %s\n\n| case | message | exit | what to do |\n"
                             "|---|---|---|---|\n" % klass)
            scratch = os.path.join(tmp, case["name"])
            rc, _, err = run_case(case, scratch)
            lines = error_lines(err)
            msg = generic(lines[0], scratch) if lines else "(no error line: %d)" % rc
            msg = msg.replace("|", "\\|")
            parts.append("| `%s` | %s | %d | %s |\n" % (case["name"], msg, case["rc"],
                                                        case["fix"]))
    tmp_path = out_path + ".tmp"
    with open(tmp_path, "w", encoding="utf-8") as f:
        f.write("".join(parts))
    os.replace(tmp_path, out_path)
    print("wrote %s (%d cases)" % (out_path, len(cases)))


if __name__ == "__main__":
    main()
