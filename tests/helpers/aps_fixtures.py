"""aps_fixtures.py — APS 8-ID-I two-time files written with h5py, the way other writers
(boost_corr, MATLAB scripts, pyXpcsViewer tools) lay them out, so the C reader is tested
on files it did not write: lower triangles, float32, big-endian, LZF, gaps in
processed_bins, index mappings, several q rings, (1, M)/(M, 1) lists, full maps, legacy
key orders — and broken files for every bad-input class of spec/data.md.

Also the numpy reference of what `xpcsfit validate --json` must report."""
import json
import os
import subprocess

import h5py
import numpy as np


def smooth_map(n, seed, base=1.0):
    """A symmetric n×n map, distinct per seed, like a decaying two-time correlation."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    tau = 3.0 + 10.0 * rng.random()
    c = base + (0.2 + 0.1 * rng.random()) * np.exp(-np.abs(t[:, None] - t[None, :]) / tau)
    noise = rng.normal(0.0, 0.01, (n, n))
    return c + 0.5 * (noise + noise.T)


def upper(m):
    return np.triu(m)


def lower(m):
    return np.tril(m)


def list_shaped(values, shape, dtype=float):
    """A 1-D list as stored: '1d' (M,), 'row' (1, M), 'col' (M, 1), 'scalar'."""
    a = np.asarray(values, dtype=dtype)
    if shape == "row":
        return a.reshape(1, -1)
    if shape == "col":
        return a.reshape(-1, 1)
    if shape == "scalar":
        return a.reshape(())
    return a.reshape(-1)


def _ds(f, path, data, **kw):
    kw.setdefault("track_times", False)
    return f.create_dataset(path, data=data, **kw)


def write_aps_u(path, maps, q_list, phi_list, bins, mapping=None, num_pts="auto",
                frame_time=None, stride=None, avg=None, map_dtype="<f8", lzf=False,
                list_shape="1d", extra=None):
    """APS-U file; maps[k] is stored as c2_{k+1:05d} exactly as given (triangle or full)."""
    with h5py.File(path, "w", track_order=False) as f:
        _ds(f, "/xpcs/qmap/dynamic_v_list_dim0", list_shaped(q_list, list_shape))
        _ds(f, "/xpcs/qmap/dynamic_v_list_dim1", list_shaped(phi_list, list_shape))
        if num_pts == "auto":
            num_pts = [len(q_list), len(phi_list)]
        if num_pts is not None:
            _ds(f, "/xpcs/qmap/dynamic_num_pts", np.asarray(num_pts, dtype="<i4"))
        if mapping is not None:
            _ds(f, "/xpcs/qmap/dynamic_index_mapping", np.asarray(mapping, dtype="<i8"))
        _ds(f, "/xpcs/twotime/processed_bins", list_shaped(bins, list_shape, dtype="<i4"))
        g = f.create_group("/xpcs/twotime/correlation_map", track_order=False)
        for k, m in enumerate(maps):
            kw = {"compression": "lzf", "chunks": True} if lzf else {}
            _ds(g, "c2_%05d" % (k + 1), np.asarray(m).astype(map_dtype), **kw)
        if frame_time is not None:
            _ds(f, "/entry/instrument/detector_1/frame_time", np.float64(frame_time))
        if stride is not None:
            _ds(f, "/xpcs/twotime/config/stride_frame", np.int64(stride))
        if avg is not None:
            _ds(f, "/xpcs/twotime/config/avg_frame", np.int64(avg))
        f.create_group("/entry/instrument/bluesky/metadata")
        if extra:
            extra(f)


def write_aps_old(path, maps, dq, dphi, keys=None, exposure_period=None, stride=None,
                  avg=None, list_shape="row", map_dtype="<f8", version="1.0"):
    """Legacy file; maps[k] is stored under keys[k] (default C2T_{k+1:05d})."""
    if keys is None:
        keys = ["C2T_%05d" % (k + 1) for k in range(len(maps))]
    with h5py.File(path, "w") as f:
        if version is not None:
            _ds(f, "/xpcs/Version", np.bytes_(version))
        _ds(f, "/xpcs/dqlist", list_shaped(dq, list_shape))
        _ds(f, "/xpcs/dphilist", list_shaped(dphi, list_shape))
        g = f.create_group("/exchange/C2T_all")
        for key, m in zip(keys, maps):
            _ds(g, key, np.asarray(m).astype(map_dtype))
        if exposure_period is not None:
            _ds(f, "/measurement/instrument/detector/exposure_period",
                np.full((1, 1), exposure_period))
        if stride is not None:
            _ds(f, "/xpcs/stride_frames", np.full((1, 1), stride, dtype="<i8"))
        if avg is not None:
            _ds(f, "/xpcs/avg_frames", np.full((1, 1), avg, dtype="<i8"))


def write_config(path, mode="static", q=0.01, dt=0.1, start=None, end=None,
                 phi_ranges=None, fallback=None, data=None):
    lines = ["analysis_mode: %s" % mode]
    if data is not None:
        lines += ["experimental_data:", "  file_path: %s" % data]
    lines.append("analyzer_parameters:")
    if dt is not None:
        lines.append("  dt: %r" % dt)
    if start is not None:
        lines.append("  start_frame: %d" % start)
    if end is not None:
        lines.append("  end_frame: %d" % end)
    if q is not None:
        lines.append("  scattering: {wavevector_q: %r}" % q)
    if phi_ranges is not None:
        lines += ["phi_filtering:", "  enabled: true", "  target_ranges:"]
        lines += ["    - {min_angle: %r, max_angle: %r}" % r for r in phi_ranges]
        if fallback is not None:
            lines.append("  fallback_to_all_angles: %s" % ("true" if fallback else "false"))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def diagonal_corrected(c):
    c = np.array(c, dtype=float)
    n = c.shape[0]
    b = 0.5 * (np.diag(c, 1) + np.diag(c, -1))
    d = np.empty(n)
    d[0] = b[0]
    d[-1] = b[-1]
    d[1:-1] = 0.5 * (b[:-1] + b[1:])
    c[np.arange(n), np.arange(n)] = d
    return c


def expected_means(full, start=1, end=None):
    """(fitted mean, diagonal mean) of a full symmetric stored map for the 1-based
    inclusive frame window, as validate reports them."""
    full = diagonal_corrected(full)
    n_all = full.shape[0]
    end = n_all if end in (None, -1) else end
    w = full[start - 1:end, start - 1:end]
    n = w.shape[0]
    iu = np.triu_indices(n, 1)
    keep = iu[0] >= 1
    return float(w[iu[0][keep], iu[1][keep]].mean()), float(np.diag(w).mean())


def binary():
    return os.environ["XF_BINARY"]


def tmp_dir():
    d = os.environ.get("XF_TMP", "/tmp/xf_py_tests")
    os.makedirs(d, exist_ok=True)
    return d


def run(args, env=None):
    """Run the CLI; returns (exit code, stdout, stderr)."""
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([binary()] + list(args), capture_output=True, text=True, env=e,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def validate(config, data=None, env=None):
    args = ["validate", "--config", config, "--json"]
    if data is not None:
        args += ["--data", data]
    rc, out, err = run(args, env)
    if rc != 0:
        raise AssertionError("validate failed (%d): %s" % (rc, err))
    return json.loads(out), err


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def close(a, b, rel=1e-12, what=""):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or not np.allclose(a, b, rtol=rel, atol=0):
        raise AssertionError("%s: got %r, want %r" % (what, a.tolist(), b.tolist()))
