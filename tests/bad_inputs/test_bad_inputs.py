"""test_bad_inputs.py — the bad-input corpus (tests/bad_inputs/cases_*.py): every case
exits with its code and one error line naming the problem, nothing else on stderr that
looks like a crash or library noise, and docs/errors.md lists every case."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import all_cases, check_case  # noqa: E402


def main():
    tmp = os.environ.get("XF_TMP", "/tmp/xf_bad_inputs")
    os.makedirs(tmp, exist_ok=True)
    doc_path = os.path.join(os.environ["XF_SOURCE_DIR"], "docs", "errors.md")
    doc = open(doc_path, encoding="utf-8").read() if os.path.exists(doc_path) else ""
    only = os.environ.get("XF_CASE")
    failed = 0
    cases = all_cases()
    for case in cases:
        if only and case["name"] != only:
            continue
        try:
            check_case(case, os.path.join(tmp, case["name"]))
            if "`%s`" % case["name"] not in doc:
                raise AssertionError("not listed in docs/errors.md "
                                     "(run tests/bad_inputs/make_errors_doc.py)")
            print("ok   %s" % case["name"])
        except Exception as e:  # report every case, then fail
            failed += 1
            print("FAIL %s: %s" % (case["name"], e))
    print("%d cases, %d failed" % (len(cases), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
