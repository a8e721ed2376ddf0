"""cases_config.py — configs that cannot be used: one line naming the key and the file, exit 2."""
from corpus import expect_nothing_written

CASES = [
    {"name": "config_missing", "klass": "Configs",
     "make": lambda d: ["validate", "--config", d + "/nope.yaml"],
     "rc": 2, "needles": ["nope.yaml"],
     "fix": "Check the path given to --config.",
     "check": expect_nothing_written()},
]
