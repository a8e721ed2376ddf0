"""tally.py — the pass/fail tally the CLI tests keep: check() records a failed condition
and prints it at once (the test goes on, so one run shows every failure); summary()
prints the count and gives the exit status, 1 when anything failed or nothing was
checked (a test that checked nothing proves nothing)."""

FAILURES = []
CHECKS = [0]


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)
    return bool(cond)


def summary():
    print(f"checks: {CHECKS[0] - len(FAILURES)} passed, {len(FAILURES)} failed")
    return 1 if FAILURES or CHECKS[0] == 0 else 0
