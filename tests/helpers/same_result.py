"""same_result.py — two result folders hold the same result: parameters.json equal but for
its timings, and every results.h5 dataset byte-equal (the resume and kill tests)."""
import json
import os

import h5py
import numpy as np

from tally import check


def params(d):
    with open(os.path.join(d, "parameters.json")) as f:
        p = json.load(f)
    p.pop("timing_s", None)
    return p


def datasets(path):
    found = {}
    with h5py.File(path, "r") as h:
        h.visititems(lambda n, o: found.__setitem__(n, np.asarray(o[()]))
                     if isinstance(o, h5py.Dataset) else None)
    return found


def same_array(x, y):
    """Two datasets' values equal: numbers byte for byte (dtype and shape too), strings
    (variable-length: object arrays, whose bytes are pointers) string by string."""
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype == object or y.dtype == object:
        return x.shape == y.shape and x.tolist() == y.tolist()
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def same_result(a, b, what):
    check(params(a) == params(b), f"{what}: parameters.json differs (timings aside)")
    da, db = datasets(os.path.join(a, "results.h5")), datasets(os.path.join(b, "results.h5"))
    check(sorted(da) == sorted(db), f"{what}: results.h5 dataset lists differ")
    for name in da:
        if name in db:
            check(same_array(da[name], db[name]), f"{what}: /{name} differs")
