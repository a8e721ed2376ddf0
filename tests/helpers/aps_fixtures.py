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

from waits import RUN_GUARD_S


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
                       timeout=RUN_GUARD_S)
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


# --- Real beamline layouts -------------------------------------------------------------
# What files from the beamline hold besides the datasets xpcsfit reads: the qmap group
# of the mask tool copied in whole (roi maps, static partition, index mappings stored in
# the smallest unsigned integer type, map_names/map_units as variable-length strings,
# unit attributes), multi-tau and two-time g2 next to the maps, the correlator's config
# group (strings and integers), an external link to a G2 file that is often not copied,
# float32 upper-triangle maps LZF-compressed in whole-map chunks above 8192 elements.

def smallest_uint(values):
    """Integer array in the smallest unsigned type that holds it (as the mask tool)."""
    a = np.asarray(values)
    for t in (np.uint8, np.uint16, np.uint32, np.uint64):
        if a.size == 0 or a.max() <= np.iinfo(t).max:
            return a.astype(t)
    return a


def qphi_partition(q_list, phi_list, masked_cells=()):
    """Natural-order labels of a q × φ grid with some cells holding no pixel: returns
    the index mapping (label k → flat cell of label k+1) of the cells kept."""
    cells = [c for c in range(len(q_list) * len(phi_list)) if c not in set(masked_cells)]
    return np.asarray(cells)


def write_aps_u_real(path, maps, q_list, phi_list, bins, mapping, frame_time=None,
                     stride=1, avg=1, map_names=("q", "phi"), multitau=True,
                     twotime=True):
    """An APS-U result as the correlator writes it after copying the mask tool's qmap.
    maps[k] is stored as c2_{k+1:05d}, float32, as given (upper triangle)."""
    n_q, n_phi = len(q_list), len(phi_list)
    with h5py.File(path, "w") as f:
        f.attrs["default"] = "entry"
        e = f.create_group("/entry")
        e.create_dataset("start_time", data="2024-03-01T10:00:00")
        det = f.create_group("/entry/instrument/detector_1")
        if frame_time is not None:
            det.create_dataset("frame_time", data=np.float64(frame_time))
            det.create_dataset("count_time", data=np.float64(frame_time * 0.9))
        det.create_dataset("x_pixel_size", data=7.5e-5)
        f.create_dataset("/entry/instrument/incident_beam/incident_energy", data=10.0)
        md = f.create_group("/entry/instrument/bluesky/metadata")
        md.attrs["scan_id"] = 42
        md.create_dataset("sample", data="silica in glycerol")
        qm = f.create_group("/xpcs/qmap")
        qm.attrs["version"] = "0.3.1"
        qm.attrs["hash"] = "0" * 64
        qm.create_dataset("map_names", data=list(map_names))
        qm.create_dataset("map_units", data=["Å⁻¹", "deg"])
        for pre in ("dynamic", "static"):
            d0 = qm.create_dataset(pre + "_v_list_dim0", data=np.asarray(q_list, float))
            d0.attrs["unit"], d0.attrs["name"], d0.attrs["size"] = "Å⁻¹", map_names[0], n_q
            d1 = qm.create_dataset(pre + "_v_list_dim1", data=np.asarray(phi_list, float))
            d1.attrs["unit"], d1.attrs["name"], d1.attrs["size"] = "deg", map_names[1], n_phi
            qm.create_dataset(pre + "_num_pts", data=[n_q, n_phi])
            qm.create_dataset(pre + "_index_mapping", data=smallest_uint(mapping))
            roi = np.zeros((8, 8), dtype=np.uint32)
            roi.flat[: len(mapping)] = np.arange(1, len(mapping) + 1)
            qm.create_dataset(pre + "_roi_map", data=smallest_uint(roi))
        qm.create_dataset("mask", data=np.ones((8, 8), dtype=np.uint8))
        qm.create_dataset("beam_center_x", data=4.0)
        qm.create_dataset("energy", data=10.0)
        qm.create_dataset("source_file", data="/data/raw/A001_00001.h5")
        n = np.asarray(maps[0]).shape[0]
        if multitau:
            mt = f.create_group("/xpcs/multitau")
            mt.create_dataset("delay_list", data=np.arange(1, 9, dtype=np.float32))
            mt.create_dataset("normalized_g2", data=np.ones((8, len(mapping)), np.float32))
            mt.create_dataset("config/stride_frame", data=np.int64(1))
            mt["unnormalized_g2"] = h5py.ExternalLink("A001_results_G2.hdf", "/G2IPIF")
        f.create_dataset("/xpcs/temporal_mean/scattering_2d", data=np.ones((1, 8, 8), np.float32))
        f.create_dataset("/xpcs/spatial_mean/intensity_vs_time", data=np.ones((2, n), np.float32))
        if twotime:
            tt = f.create_group("/xpcs/twotime")
            cm = tt.create_group("correlation_map")
            for k, m in enumerate(maps):
                m = np.asarray(m, dtype=np.float32)
                kw = {}
                if m.size > 8192:
                    kw = {"compression": "lzf", "chunks": m.shape}
                cm.create_dataset("c2_%05d" % (k + 1), data=m, **kw)
            tt.create_dataset("processed_bins", data=np.asarray(bins, dtype=np.int32))
            tt.create_dataset("normalized_g2", data=np.ones((n, len(bins)), np.float32))
            tt.create_dataset("normalized_g2_segments",
                              data=np.ones((n // 5, 5, len(bins)), np.float32))
            tt.create_dataset("delay_list", data=np.arange(n, dtype=np.float32))
            cfg = tt.create_group("config")
            cfg.create_dataset("analysis_type", data="twotime")
            cfg.create_dataset("qmap", data="/data/qmap/qmap_S270_D27.hdf")
            cfg.create_dataset("stride_frame", data=np.int64(stride))
            cfg.create_dataset("avg_frame", data=np.int64(avg))
            cfg.create_dataset("smooth", data="sqmap")
            cfg.create_dataset("gpu_id", data=np.int64(0))


def write_aps_old_real(path, maps, dq, dphi, qphi_bins=None, keys=None,
                       exposure_period=0.01, stride=1, avg=1,
                       analysis_type="Twotime", two_time=True):
    """A legacy (MATLAB / early boost_corr) result: (1, M) lists of every dynamic bin of
    the qmap, (1, 1) uint64 numbers, fixed-length byte strings, /xpcs/qphi_bin_to_process
    ((n, 1) uint64, 1-based bins of the maps), maps g2_00001… in /exchange/C2T_all."""
    if keys is None:
        keys = ["g2_%05d" % (k + 1) for k in range(len(maps))]
    one = lambda v, t="<u8": np.full((1, 1), v, dtype=t)  # noqa: E731
    with h5py.File(path, "w") as f:
        x = f.create_group("/xpcs")
        x.create_dataset("Version", data=np.bytes_("1.0"))
        x.create_dataset("analysis_type", data=np.bytes_(analysis_type))
        x.create_dataset("output_data", data=np.bytes_("/exchange"))
        x.create_dataset("dqlist", data=np.asarray(dq, float).reshape(1, -1))
        x.create_dataset("dphilist", data=np.asarray(dphi, float).reshape(1, -1))
        x.create_dataset("dnoq", data=one(len(dq), "<f8"))
        x.create_dataset("sqlist", data=np.linspace(0.001, 0.03, 270).reshape(1, -1))
        x.create_dataset("dqmap", data=np.zeros((6, 6), dtype=np.uint32))
        x.create_dataset("stride_frames", data=one(stride))
        x.create_dataset("avg_frames", data=one(avg))
        x.create_dataset("data_begin_todo", data=one(1))
        if qphi_bins is not None:
            x.create_dataset("qphi_bin_to_process",
                             data=np.asarray(qphi_bins, dtype="<u8").reshape(-1, 1))
        d = f.create_group("/measurement/instrument/detector")
        d.create_dataset("exposure_period", data=one(exposure_period, "<f8"))
        d.create_dataset("exposure_time", data=one(exposure_period * 0.9, "<f8"))
        d.create_dataset("manufacturer", data=np.bytes_("LAMBDA"))
        f.create_dataset("/measurement/instrument/acquisition/compression",
                         data=np.bytes_("ENABLED"))
        ex = f.create_group("/exchange")
        ex.create_dataset("pixelSum", data=np.ones((6, 6), np.float32))
        ex.create_dataset("frameSum", data=np.ones((2, 10), np.float32))
        if two_time:
            g = ex.create_group("C2T_all")
            for key, m in zip(keys, maps):
                g.create_dataset(key, data=np.asarray(m, dtype=np.float32))
            ex.create_dataset("g2full", data=np.ones((10, len(maps)), np.float32))
        else:
            ex.create_dataset("norm-0-g2", data=np.ones((48, len(dq)), np.float32))
            ex.create_dataset("tau", data=np.arange(48, dtype=np.float32).reshape(1, -1))


# --- Links (ADR 0016, ADR 0051) ----------------------------------------------------------
# A file whose dataset (or group) is a link: to another file (what h5py.ExternalLink
# writes when a tool splits a result), to another place in the same file, or to nothing.

def link_elsewhere(path, name, other="other.h5", value=None):
    """Move `name` (a dataset or group) of the file at path into the file `other` beside
    it, under the same name, and leave an external link to it; `value` replaces what is
    moved (e.g. a stride of 10 where the file held 1, so that following the link shows)."""
    other_path = os.path.join(os.path.dirname(path), other)
    parent = os.path.dirname(name)
    with h5py.File(path, "a") as f, h5py.File(other_path, "a") as o:
        if value is not None:
            o[name] = value
        else:
            f.copy(f[name], o.require_group(parent), name=os.path.basename(name))
        del f[name]
        f[name] = h5py.ExternalLink(other_path, name)
    return other_path


def link_within(path, name, target, move=True):
    """Replace `name` by a soft link to `target` in the same file; with move the object
    is moved there first, without it the link leads to nothing."""
    with h5py.File(path, "a") as f:
        if move:
            f.move(name, target)
        else:
            del f[name]
        f[name] = h5py.SoftLink(target)


def expect_validate_error(tmp, cfg, data, code, *needles, env=None):
    """`xpcsfit validate` on bad input: exit `code`, exactly one error line holding every
    needle, no HDF5 stack, nothing on stdout, nothing written into `tmp`. Returns the line."""
    before = sorted(os.listdir(tmp))
    rc, out, err = run(["validate", "--config", cfg, "--data", data], env)
    lines = [l for l in err.strip().splitlines() if not l.startswith("xpcsfit: warning:")]
    check(rc == code, "%s: exit %d, want %d (%s)" % (data, rc, code, err))
    check(len(lines) == 1 and lines[0].startswith("xpcsfit: error: "),
          "one error line expected: %r" % err)
    check("HDF5-DIAG" not in err and "#000" not in err, "HDF5 stack printed: " + err)
    check(out == "", "nothing on stdout: %r" % out)
    for n in needles:
        check(n in lines[0], "%r not in %r" % (n, lines[0]))
    check(sorted(os.listdir(tmp)) == before, "a file was written")
    return lines[0]


def run_tests(tests):
    """Run every test function, report each, and return the exit status (1 if any failed)."""
    failed = 0
    for t in tests:
        try:
            t()
            print("ok   %s" % t.__name__)
        except Exception as e:  # report every failure, then fail
            failed += 1
            print("FAIL %s: %s" % (t.__name__, e))
    return 1 if failed else 0


def module_tests(namespace):
    """The test_* functions of a module's globals(), in name order."""
    return [v for k, v in sorted(namespace.items()) if k.startswith("test_")]
