"""cases_data.py — data files that cannot be used: one line naming what and where, exit 1
(exit 2 where the fix is in the config or on the command line). Degenerate values are
refused before any fit (docs/input-formats.md, "Refused values" and "Limits")."""
import os

import h5py
import numpy as np

from aps_fixtures import (link_elsewhere, link_within, smooth_map, upper, write_aps_old,
                          write_aps_u, write_config)
from corpus import expect_nothing_written

N = 30  # frames of the small maps
MAP1 = "/xpcs/twotime/correlation_map/c2_00001"
STRIDE = "/xpcs/twotime/config/stride_frame"
FRAME_TIME = "/entry/instrument/detector_1/frame_time"
Q_LIST = "/xpcs/qmap/dynamic_v_list_dim0"
BINS = "/xpcs/twotime/processed_bins"
HELD = {}  # files kept open by a "writer" while a case runs, closed by its check


def good_file(d, name="data.h5", maps=None, q=(0.01,), phi=(0.0, 45.0), frame_time=0.1,
              **kw):
    """A valid two-angle APS-U file under d; keyword arguments go to write_aps_u."""
    if maps is None:
        maps = [upper(smooth_map(N, s)) for s in range(len(phi))]
    path = os.path.join(d, name)
    write_aps_u(path, maps, list(q), list(phi), list(range(1, len(phi) + 1)),
                frame_time=frame_time, **kw)
    return path


def config(d, data, name="cfg.yaml", **kw):
    """A static config for data (dt from the file unless given)."""
    path = os.path.join(d, name)
    kw.setdefault("dt", None)
    write_config(path, data=data, **kw)
    return path


def validate(d, data=None, **kw):
    """validate on data (a good file when None) with a config written for it."""
    data = data or good_file(d)
    return ["validate", "--config", config(d, data, **kw)]


def edit_map(path, edit, map_path=MAP1):
    """Rewrite one stored map through edit(array) -> array."""
    with h5py.File(path, "a") as f:
        m = f[map_path]
        a = m[...]
        m[...] = edit(a)


def set_value(i, j, v):
    def edit(a):
        a[i, j] = v
        return a
    return edit


def declared_map(d, rows, name="declared.h5", fill=None):
    """A tiny file declaring one rows × rows map (chunked 64 × 64, nothing written but
    what fill writes)."""
    path = os.path.join(d, name)
    with h5py.File(path, "w") as f:
        f["/xpcs/qmap/dynamic_v_list_dim0"] = np.array([0.01])
        f["/xpcs/qmap/dynamic_v_list_dim1"] = np.array([0.0])
        f["/xpcs/qmap/dynamic_num_pts"] = np.array([1, 1], dtype="<i4")
        f["/xpcs/twotime/processed_bins"] = np.array([1], dtype="<i4")
        m = f.create_dataset(MAP1, shape=(rows, rows), dtype="<f8", chunks=(64, 64))
        if fill:
            fill(m)
        f["/entry/instrument/detector_1/frame_time"] = np.float64(0.1)
    return path


def write_list(path, dataset, values):
    with h5py.File(path, "a") as f:
        del f[dataset]
        f[dataset] = np.asarray(values)


def held_open(d):
    """A good file that an HDF5 writer (h5py in append mode) keeps open during the run."""
    path = good_file(d)
    HELD[d] = h5py.File(path, "a")
    return validate(d, path)


def release(scratch, rc, out, err):
    f = HELD.pop(scratch, None)
    if f is not None:
        f.close()


def truncated(d):
    path = good_file(d)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    return validate(d, path)


def not_hdf5(d):
    path = os.path.join(d, "data.h5")
    with open(path, "w") as f:
        f.write("q,phi\n0.01,0\n")
    return validate(d, path)


def special(kind):
    def make(d):
        path = os.path.join(d, "data.h5")
        if kind == "folder":
            os.mkdir(path)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "dangling":
            os.symlink(os.path.join(d, "gone.h5"), path)
        return validate(d, path)
    return make


def string_map(d):
    path = good_file(d)
    with h5py.File(path, "a") as f:
        del f[MAP1]
        f[MAP1] = np.full((N, N), b"1.0", dtype="S3")
    return validate(d, path)


def no_bins(d):
    path = good_file(d)
    with h5py.File(path, "a") as f:
        del f["/xpcs/twotime/processed_bins"]
    return validate(d, path)


def bad_list(dataset, values):
    def make(d):
        path = good_file(d)
        write_list(path, dataset, values)
        return validate(d, path)
    return make


def bad_value(i, j, v, **cfg):
    def make(d):
        path = good_file(d)
        edit_map(path, set_value(i, j, v))
        return validate(d, path, **cfg)
    return make


def flat_map(value):
    def make(d):
        path = good_file(d, maps=[np.full((N, N), value), upper(smooth_map(N, 1))])
        return validate(d, path)
    return make


def frame_time(v, **kw):
    def make(d):
        return validate(d, good_file(d, frame_time=v, **kw))
    return make


def huge_declared(d):
    return validate(d, declared_map(d, 3000000000))


def long_list(d):
    path = good_file(d)
    with h5py.File(path, "a") as f:
        del f["/xpcs/qmap/dynamic_v_list_dim1"]
        f.create_dataset("/xpcs/qmap/dynamic_v_list_dim1", shape=(1 << 30,), dtype="<f8",
                         chunks=(4096,))
    return validate(d, path)


def map_names(names):
    def make(d):
        path = good_file(d, extra=lambda f: f.create_dataset(
            "/xpcs/qmap/map_names", data=np.array(names, dtype="S8")))
        return validate(d, path)
    return make


def external_link(d):
    """The first map is an external link to a FIFO: following it would block."""
    path = good_file(d)
    os.mkfifo(os.path.join(d, "pipe"))
    with h5py.File(path, "a") as f:
        del f[MAP1]
        f[MAP1] = h5py.ExternalLink(os.path.join(d, "pipe"), "/c2")
    return validate(d, path)


def external_storage(d):
    """The first map keeps its values in a FIFO (external raw storage)."""
    path = good_file(d)
    os.mkfifo(os.path.join(d, "pipe"))
    with h5py.File(path, "a") as f:
        del f[MAP1]
        f.create_dataset(MAP1, shape=(N, N), dtype="<f8",
                         external=[(os.path.join(d, "pipe"), 0, h5py.h5f.UNLIMITED)])
    return validate(d, path)


def linked(name, value=None):
    """A good file (stride = avg = 1) whose `name` is an external link to other.h5 (holding
    `value` when given: a stride of 10 there was read as the default 1 before ADR 0051)."""
    def make(d):
        path = good_file(d, stride=1, avg=1)
        link_elsewhere(path, name, value=value)
        return validate(d, path)
    return make


def soft_to_elsewhere(d):
    """stride_frame is a soft link within the file to /split/stride_frame, and /split is
    an external link: the soft link leads out of the file (it was followed before)."""
    path = good_file(d, stride=10, avg=1)
    link_within(path, STRIDE, "/split/stride_frame")
    link_elsewhere(path, "/split")
    return validate(d, path)


def soft_to_nothing(d):
    path = good_file(d, stride=10, avg=1)
    link_within(path, STRIDE, "/gone/stride_frame", move=False)
    return validate(d, path)


def not_a_dataset(name):
    """`name` is a group where a number is expected: present, so never defaulted."""
    def make(d):
        path = good_file(d, stride=1, avg=1)
        with h5py.File(path, "a") as f:
            del f[name]
            f.create_group(name)
        return validate(d, path)
    return make


def legacy_linked(name):
    def make(d):
        path = os.path.join(d, "data.h5")
        write_aps_old(path, [upper(smooth_map(N, s)) for s in range(2)], [0.01, 0.01],
                      [0.0, 45.0], exposure_period=0.1, stride=1, avg=1)
        link_elsewhere(path, name, value=np.full((1, 1), 10, dtype="<i8"))
        return validate(d, path)
    return make


def typed_list(dataset, values, dtype):
    def make(d):
        path = good_file(d)
        write_list(path, dataset, np.asarray(values, dtype=dtype))
        return validate(d, path)
    return make


def index_mapping(values):
    def make(d):
        path = good_file(d, mapping=np.asarray(values, dtype="<i8"))
        return validate(d, path)
    return make


def huge_chunk(d):
    """A 20000² map declared as one 3.2 GB gzip chunk: written with ones it would be a
    3 MB file whose every read decompresses 3.2 GB (refused from the declaration)."""
    path = os.path.join(d, "data.h5")
    with h5py.File(path, "w") as f:
        f["/xpcs/qmap/dynamic_v_list_dim0"] = np.array([0.01])
        f["/xpcs/qmap/dynamic_v_list_dim1"] = np.array([0.0])
        f["/xpcs/twotime/processed_bins"] = np.array([1], dtype="<i4")
        f.create_dataset(MAP1, shape=(20000, 20000), dtype="<f8", chunks=(20000, 20000),
                         compression="gzip")
        f["/entry/instrument/detector_1/frame_time"] = np.float64(0.1)
    return validate(d, path, end=40)


def sim_duplicate_phi(d):
    cfg = os.path.join(d, "cfg.yaml")
    write_config(cfg, end=20)
    return ["simulate", "--config", cfg, "--phi", "0,90,360", "--out", d + "/out/sim.h5"]


def sim_bad_phi(d):
    cfg = os.path.join(d, "cfg.yaml")
    write_config(cfg, end=20)
    return ["simulate", "--config", cfg, "--phi", "0,1e300", "--out", d + "/out/sim.h5"]


def nlsq_flat(d):
    path = good_file(d, maps=[np.zeros((N, N)), np.zeros((N, N))])
    return ["nlsq", "--config", config(d, path), "--out", d + "/out", "--no-plots"]


def no_sim_file(scratch, rc, out, err):
    if os.path.exists(os.path.join(scratch, "out", "sim.h5")):
        raise AssertionError("simulate wrote a file it then refuses")


# --- Several q rings (adr/0063) ---------------------------------------------------------
def two_rings(d, q=(0.01, 0.02), phi=(0.0, 45.0), bins=(1, 2, 3, 4)):
    """An APS-U file of rings q × angles phi; bins picks the stored (q, φ) cells
    (ring-major, 1-based)."""
    maps = [upper(smooth_map(N, s)) for s in range(len(bins))]
    path = os.path.join(d, "rings.h5")
    write_aps_u(path, maps, list(q), list(phi), list(bins), frame_time=0.1)
    return path


def rings_validate(q, **kw):
    def make(d):
        return validate(d, two_rings(d, **kw.pop("file", {})), q=q, **kw)
    return make


def ring_all_filtered(d):
    # ring 0.02 holds only φ = 0 (bin 3); the filter keeps 40..50: none of that ring
    path = two_rings(d, bins=(1, 2, 3))
    return validate(d, path, q="all", phi_ranges=[(40.0, 50.0)], fallback=False)


def ring_without_map(d):
    # the qmap declares rings 0.01, 0.02 and 0.03; no bin of 0.02 is processed
    path = two_rings(d, q=(0.01, 0.02, 0.03), bins=(1, 2, 5, 6))
    return validate(d, path, q=[0.01, 0.0201])


def rings_batch(d):
    # batch fits every selected ring of a file (adr/0065 addendum): a list value that
    # matches no ring of the file fails that file, before any ring is fitted
    path = two_rings(d)
    return ["batch", "--config", config(d, path, q=[0.01, 0.05]), "--out", d + "/out",
            "--no-plots", path]


def rings_joint_no_match(d):
    path = two_rings(d)
    return ["nlsq", "--joint", "--config", config(d, path, q=[0.01, 0.05]), "--out",
            d + "/out", "--no-plots"]


def rings_cmc_joint_no_match(d):
    path = two_rings(d)
    return ["cmc", "--joint", "--config", config(d, path, q=[0.01, 0.05]), "--out",
            d + "/out", "--no-plots"]


def many_rings(d):
    """260 rings of 2 angles (q 0.002 + k 1e-5): a joint problem of 3 + 260 x 4 = 1043
    free parameters, above the joint cap of 1024 (adr/0073)."""
    n = 260
    maps = [upper(smooth_map(N, s % 4)) for s in range(2 * n)]
    path = os.path.join(d, "many_rings.h5")
    write_aps_u(path, maps, [0.002 + 1e-5 * k for k in range(n)], [0.0, 45.0],
                list(range(1, 2 * n + 1)), frame_time=0.1)
    return path


def joint_too_large(cmd):
    def make(d):
        path = many_rings(d)
        cfg = config(d, path, q="all")
        if cmd == "validate":
            return ["validate", "--config", cfg, "--set", "optimization.rings=joint"]
        return [cmd, "--joint", "--config", cfg, "--out", d + "/out", "--no-plots"]
    return make


def rings_frames_differ(cmd):
    # ring 0.02's maps are 20 x 20, ring 0.01's 30 x 30: one file has one frame grid
    def make(d):
        maps = [upper(smooth_map(N, 0)), upper(smooth_map(N, 1)),
                upper(smooth_map(20, 2)), upper(smooth_map(20, 3))]
        path = os.path.join(d, "rings.h5")
        write_aps_u(path, maps, [0.01, 0.02], [0.0, 45.0], [1, 2, 3, 4], frame_time=0.1)
        return cmd(d, path)
    return make


def rings_dt_per_ring(d):
    # a frame_time per ring (two values): a file has one dt, shared by its rings
    path = two_rings(d)
    with h5py.File(path, "a") as f:
        del f[FRAME_TIME]
        f[FRAME_TIME] = np.array([0.1, 0.2])
    return validate(d, path, q="all", dt=None)


def rings_nlsq(d, path, **kw):
    return ["nlsq", "--config", config(d, path, **kw), "--out", d + "/out", "--no-plots"]


def ring_all_filtered_fit(*extra):
    # per ring (and joint): the ring whose every angle is filtered out is refused before
    # any ring is fitted; nothing is written
    def make(d):
        path = two_rings(d, bins=(1, 2, 3))
        return rings_nlsq(d, path, q="all", phi_ranges=[(40.0, 50.0)],
                          fallback=False) + list(extra)
    return make


def range_only_empty_ring(d):
    # the range holds only the qmap's 0.02 ring, which no processed bin holds
    path = two_rings(d, q=(0.01, 0.02, 0.03), bins=(1, 2, 5, 6))
    return validate(d, path, q={"min": 0.015, "max": 0.025})


def sim_duplicate_q(d):
    cfg = os.path.join(d, "cfg.yaml")
    write_config(cfg, end=20)
    return ["simulate", "--config", cfg, "--phi", "0,90", "--q", "0.003,0.003",
            "--out", d + "/out/sim.h5"]


D = "Data files"
CASES = [
    {"name": "data_missing", "klass": D,
     "make": lambda d: validate(d, d + "/nope.h5"),
     "rc": 1, "needles": ["data file not found", "nope.h5"],
     "fix": "Check experimental_data.file_path in the config (or --data)."},
    {"name": "data_dangling_link", "klass": D, "make": special("dangling"),
     "rc": 1, "needles": ["data file not found", "data.h5"],
     "fix": "The symbolic link points nowhere: point it at the file, or name the file itself."},
    {"name": "data_folder", "klass": D, "make": special("folder"),
     "rc": 1, "needles": ["not a regular file", "data.h5"],
     "fix": "Name the HDF5 file itself, not the folder holding it."},
    {"name": "data_fifo", "klass": D, "make": special("fifo"), "timeout": 20,
     "rc": 1, "needles": ["not a regular file", "data.h5"],
     "fix": "Copy the data to a regular file first; pipes and devices are refused unread."},
    {"name": "data_not_hdf5", "klass": D, "make": not_hdf5,
     "rc": 1, "needles": ["not an HDF5 file", "data.h5"],
     "fix": "Give the correlator's HDF5 result (.h5/.hdf), not a text export."},
    {"name": "data_truncated", "klass": D, "make": truncated,
     "rc": 1, "needles": ["truncated or damaged", "data.h5"],
     "fix": "Copy the file again from its source (the transfer was cut short)."},
    {"name": "data_locked", "klass": D, "make": held_open, "check": release,
     "rc": 1, "needles": ["locked by another program", "HDF5_USE_FILE_LOCKING", "data.h5"],
     "fix": "Close the program that writes the file (or wait for it), or set "
            "HDF5_USE_FILE_LOCKING=FALSE if you know the file is complete."},
    {"name": "data_missing_dataset", "klass": D, "make": no_bins,
     "rc": 1, "needles": ["missing dataset /xpcs/twotime/processed_bins"],
     "fix": "The file is not a complete APS-U two-time result: rerun the correlator."},
    {"name": "data_map_not_numeric", "klass": D, "make": string_map,
     "rc": 1, "needles": ["not numeric", "c2_00001"],
     "fix": "Maps must hold numbers: rewrite the map as float64."},
    {"name": "data_map_names_not_qphi", "klass": D, "make": map_names([b"x", b"y"]),
     "rc": 1, "needles": ["map_names is [x, y]", "not q × φ"],
     "fix": "Partition the qmap in q and φ (map_names [q, phi]) and correlate again."},
    {"name": "data_phi_nan", "klass": D,
     "make": bad_list("/xpcs/qmap/dynamic_v_list_dim1", [float("nan"), 45.0]),
     "rc": 1, "needles": ["φ = nan", "c2_00001", "is not an angle"],
     "fix": "Repair the φ list (/xpcs/qmap/dynamic_v_list_dim1) of the qmap."},
    {"name": "data_phi_out_of_range", "klass": D,
     "make": bad_list("/xpcs/qmap/dynamic_v_list_dim1", [0.0, 1e300]),
     "rc": 1, "needles": ["φ = 1e+300", "c2_00002", "|φ| <= 720"],
     "fix": "φ must be an angle in degrees (|φ| <= 720); repair the qmap's φ list."},
    {"name": "data_q_nan", "klass": D,
     "make": bad_list("/xpcs/qmap/dynamic_v_list_dim0", [float("nan")]),
     "rc": 1, "needles": ["q = nan", "c2_00001", "not a wavevector"],
     "fix": "Repair the q list (/xpcs/qmap/dynamic_v_list_dim0) of the qmap."},
    {"name": "data_q_zero", "klass": D,
     "make": bad_list("/xpcs/qmap/dynamic_v_list_dim0", [0.0]),
     "rc": 1, "needles": ["q = 0", "0 < q <= 100"],
     "fix": "q must lie in (0, 100] Å⁻¹; a zero q is an unfilled or masked bin."},
    {"name": "data_frame_time_inf", "klass": D, "make": frame_time(float("inf")),
     "rc": 1, "needles": ["frame timing", "inf"],
     "fix": "Repair /entry/instrument/detector_1/frame_time, or set analyzer_parameters.dt."},
    {"name": "data_frame_time_huge", "klass": D, "make": frame_time(1e308),
     "rc": 1, "needles": ["dt from the file is 1e+308 s", "outside 1e-12 to 86400 s"],
     "fix": "Repair the file's frame_time, or set analyzer_parameters.dt in the config."},
    {"name": "data_frame_time_zero", "klass": D, "make": frame_time(0.0),
     "rc": 1, "needles": ["dt from the file is 0 s", "outside"],
     "fix": "Repair the file's frame_time, or set analyzer_parameters.dt in the config."},
    {"name": "data_frame_time_negative", "klass": D, "make": frame_time(-0.1),
     "rc": 1, "needles": ["dt from the file is -0.1 s", "outside"],
     "fix": "Repair the file's frame_time, or set analyzer_parameters.dt in the config."},
    {"name": "data_stride_not_whole", "klass": D, "make": frame_time(0.1, stride=0),
     "rc": 1, "needles": ["frame timing", "stride_frame"],
     "fix": "stride_frame and avg_frame must be whole numbers from 1 to 10^6; repair them."},
    {"name": "data_map_all_zero", "klass": D, "make": flat_map(0.0),
     "rc": 1, "needles": ["c2_00001 (φ = 0) has no variance", "equals 0"],
     "fix": "The map holds no correlation (an empty bin): leave its angle out with "
            "phi_filtering, or correlate again."},
    {"name": "data_map_constant", "klass": D, "make": flat_map(1.0),
     "rc": 1, "needles": ["has no variance", "equals 1"],
     "fix": "The map holds no correlation: leave its angle out with phi_filtering."},
    {"name": "data_map_zero_nlsq", "klass": D, "make": nlsq_flat,
     "rc": 1, "needles": ["has no variance"],
     "fix": "Empty maps are refused before any fit; leave their angles out or correlate again.",
     "check": expect_nothing_written()},
    {"name": "data_value_huge", "klass": D, "make": bad_value(3, 10, 1e200),
     "rc": 1, "needles": ["value 1e+200 at frames (t1, t2) = (4, 11)", "c2_00001",
                          "plausibility limit"],
     "fix": "A stored value beyond |C2| = 1e12 is corrupt: repair the map, or move the "
            "frame window past it (start_frame/end_frame)."},
    {"name": "data_value_nan", "klass": D, "make": bad_value(3, 10, float("nan")),
     "rc": 1, "needles": ["NaN or Inf values among the points to be fitted", "c2_00001"],
     "fix": "Repair the map, or choose a frame window without the bad values."},
    {"name": "data_declared_huge", "klass": D, "make": huge_declared,
     "rc": 1, "needles": ["frame window of 3000000000 frames", "above the limit of 65536"],
     "fix": "Set analyzer_parameters.start_frame and end_frame to a window of at most "
            "65536 frames; only the window is read."},
    {"name": "data_list_too_long", "klass": D, "make": long_list,
     "rc": 1, "needles": ["dynamic_v_list_dim1", "1073741824 entries", "above the limit"],
     "fix": "A list longer than 2^24 entries is damage: repair or regenerate the file."},
    {"name": "data_external_link", "klass": D, "make": external_link, "timeout": 20,
     "rc": 1, "needles": ["c2_00001", "is a link to another file, which is not followed"],
     "fix": "Copy the maps into the file (h5py: f.copy or h5copy); links to other files "
            "are not followed, since they may name anything, a pipe included."},
    {"name": "data_link_stride_frame", "klass": D, "make": linked(STRIDE, np.int64(10)),
     "rc": 1, "needles": [STRIDE, "is a link to another file, which is not followed", "other.h5:" + STRIDE],
     "fix": "Copy stride_frame into the file (h5py: f.copy, or h5copy); an optional "
            "dataset stored as a link to another file is refused, not defaulted to 1."},
    {"name": "data_link_frame_time", "klass": D, "make": linked(FRAME_TIME, np.float64(0.1)),
     "rc": 1, "needles": [FRAME_TIME, "is a link to another file, which is not followed"],
     "fix": "Copy frame_time into the file; the frame period is read only from the file "
            "named."},
    {"name": "data_link_q_list", "klass": D, "make": linked(Q_LIST),
     "rc": 1, "needles": [Q_LIST, "is a link to another file, which is not followed"],
     "fix": "Copy the qmap's lists into the file (the layout is recognised, the link is "
            "not followed)."},
    {"name": "data_link_processed_bins", "klass": D, "make": linked(BINS),
     "rc": 1, "needles": [BINS, "is a link to another file, which is not followed"],
     "fix": "Copy processed_bins into the file."},
    {"name": "data_link_parent_group", "klass": D,
     "make": linked("/xpcs/twotime/config"),
     "rc": 1, "needles": [STRIDE, "is a link to another file, which is not followed", "through /xpcs/twotime/config"],
     "fix": "A group on the path (here /xpcs/twotime/config) links to another file: copy "
            "the group into the file."},
    {"name": "data_link_soft_to_other_file", "klass": D, "make": soft_to_elsewhere,
     "rc": 1, "needles": [STRIDE, "is a link to another file, which is not followed", "through the soft link to /split/stride_frame"],
     "fix": "A soft link whose way leads through a link to another file is refused as "
            "that link: copy the data into the file."},
    {"name": "data_link_soft_to_nothing", "klass": D, "make": soft_to_nothing,
     "rc": 1, "needles": [STRIDE, "soft link to nothing in the file",
                          "→ /gone/stride_frame"],
     "fix": "Point the soft link at a dataset of the file, or delete it (an absent "
            "stride_frame means 1)."},
    {"name": "data_stride_not_a_dataset", "klass": D, "make": not_a_dataset(STRIDE),
     "rc": 1, "needles": [STRIDE, "is not a dataset"],
     "fix": "stride_frame must be a number; it is defaulted to 1 only when it is absent."},
    {"name": "data_link_legacy_stride", "klass": D, "make": legacy_linked("/xpcs/stride_frames"),
     "rc": 1, "needles": ["/xpcs/stride_frames", "is a link to another file, which is not followed"],
     "fix": "Copy /xpcs/stride_frames into the file (legacy layout, same rule)."},
    {"name": "data_bins_huge_float", "klass": D, "make": bad_list(BINS, [1.0, 1e18]),
     "rc": 1, "needles": [BINS, "entry 1 is 1e+18, out of range", "9007199254740992"],
     "fix": "processed_bins holds bin numbers (1 … the number of q × φ cells): repair it."},
    {"name": "data_bins_huge_int64", "klass": D,
     "make": typed_list(BINS, [1, 2**62], "<i8"),
     "rc": 1, "needles": [BINS, "out of range", "2^53 = 9007199254740992"],
     "fix": "processed_bins holds bin numbers (1 … the number of q × φ cells): repair it."},
    {"name": "data_mapping_huge", "klass": D, "make": index_mapping([0, -2**62]),
     "rc": 1, "needles": ["/xpcs/qmap/dynamic_index_mapping", "out of range"],
     "fix": "dynamic_index_mapping holds flat (q, φ) cells from 0: repair the qmap."},
    {"name": "data_map_names_three", "klass": D, "make": map_names([b"q", b"phi", b"x"]),
     "rc": 1, "needles": ["map_names is [q, phi, x]", "exactly [q, phi]"],
     "fix": "A third partition coordinate is not read: partition the qmap in q and φ "
            "only (map_names [q, phi])."},
    {"name": "data_num_pts_three", "klass": D,
     "make": bad_list("/xpcs/qmap/dynamic_num_pts", [1, 2, 7]),
     "rc": 1, "needles": ["dynamic_num_pts holds 3 numbers, not the 2 of [n_q, n_φ]"],
     "fix": "dynamic_num_pts must be [n_q, n_φ]: repair or delete it."},
    {"name": "data_external_storage", "klass": D, "make": external_storage, "timeout": 20,
     "rc": 1, "needles": ["c2_00001", "keeps its values in other files"],
     "fix": "Rewrite the map with its values inside the file (external raw storage and "
            "virtual datasets are not read)."},
    {"name": "data_chunk_too_big", "klass": D, "make": huge_chunk,
     "rc": 1, "needles": ["c2_00001", "chunks of more than 256 MiB"],
     "fix": "Rewrite the maps with smaller chunks (h5py chunks=True, or rows of the map)."},
    {"name": "simulate_phi_duplicate", "klass": D, "make": sim_duplicate_phi,
     "rc": 2, "needles": ["--phi: 0 and 360 are the same angle"], "check": no_sim_file,
     "fix": "Give each angle once (360 is 0, -180 is 180)."},
    {"name": "simulate_phi_not_angle", "klass": D, "make": sim_bad_phi,
     "rc": 2, "needles": ["--phi: 1e+300 is not an angle"], "check": no_sim_file,
     "fix": "Give angles in degrees with |φ| <= 720."},
    {"name": "rings_list_no_match", "klass": D, "make": rings_validate([0.01, 0.05]),
     "rc": 1, "needles": ["wavevector_q[1] = 0.05", "nearest q ring", "0.02 1/A",
                          "2 rings span 0.01 to 0.02"],
     "fix": "Each value of a wavevector_q list must be within 5 % of a ring of the file: "
            "`xpcsfit validate` lists the rings (or use all, or a {min, max} range)."},
    {"name": "rings_range_no_match", "klass": D,
     "make": rings_validate({"min": 0.03, "max": 0.04}),
     "rc": 1, "needles": ["no q ring of the file lies in", "{min: 0.03, max: 0.04}",
                          "0.02 1/A below"],
     "fix": "Widen the range to hold a ring of the file (`xpcsfit validate` lists them)."},
    {"name": "rings_ring_without_maps", "klass": D, "make": ring_without_map,
     "rc": 1, "needles": ["wavevector_q[1] = 0.0201", "q = 0.02 ring of the qmap",
                          "has no map"],
     "fix": "That ring was not correlated (no processed bin): select another ring or "
            "correlate it."},
    {"name": "rings_all_angles_filtered", "klass": D, "make": ring_all_filtered,
     "rc": 1, "needles": ["no map left after φ filtering", "q = 0.02 ring", "available: 0"],
     "fix": "phi_filtering applies within every selected ring: widen target_ranges, set "
            "fallback_to_all_angles, or leave that ring out of wavevector_q."},
    {"name": "rings_batch_no_match", "klass": D, "make": rings_batch,
     "check": expect_nothing_written(),
     "rc": 1, "needles": ["rings.h5: ", "wavevector_q[1] = 0.05", "nearest q ring"],
     "fix": "batch fits every selected ring of each file (or, with optimization.rings: "
            "joint, one joint fit); each wavevector_q value must be within 5 % of a ring "
            "of every file (`xpcsfit validate` lists a file's rings; --overrides sets q "
            "per file)."},
    {"name": "rings_joint_no_match", "klass": D, "make": rings_joint_no_match,
     "check": expect_nothing_written(),
     "rc": 1, "needles": ["wavevector_q[1] = 0.05", "nearest q ring"],
     "fix": "A joint fit selects its rings as every fit does: each wavevector_q value "
            "within 5 % of a ring of the file (`xpcsfit validate` lists them)."},
    {"name": "rings_cmc_joint_no_match", "klass": D, "make": rings_cmc_joint_no_match,
     "check": expect_nothing_written(),
     "rc": 1, "needles": ["wavevector_q[1] = 0.05", "nearest q ring"],
     "fix": "The joint posterior selects its rings as every fit does: each wavevector_q "
            "value within 5 % of a ring of the file (`xpcsfit validate` lists them)."},
    {"name": "rings_joint_too_large", "klass": D, "make": joint_too_large("nlsq"),
     "check": expect_nothing_written(),
     "rc": 2, "needles": ["joint fit of 260 rings has 1043 free parameters",
                          "above the cap of 1024", "optimization.rings: per_ring"],
     "fix": "A joint fit's normal matrix grows as the square of its parameters (3 shared "
            "plus each ring's contrast and offset per angle) and is built from every "
            "point at every step: select fewer rings (a list or a range of "
            "wavevector_q), or fit them one by one (optimization.rings: per_ring; "
            "docs/cli.md \"nlsq, cmc, fit with several rings\", adr/0073)."},
    {"name": "rings_joint_too_large_validate", "klass": D,
     "make": joint_too_large("validate"),
     "rc": 2, "needles": ["joint fit of 260 rings has 1043 free parameters",
                          "above the cap of 1024"],
     "fix": "validate refuses the joint plan nlsq --joint would refuse (above)."},
    {"name": "rings_joint_too_large_cmc", "klass": D, "make": joint_too_large("cmc"),
     "check": expect_nothing_written(),
     "rc": 2, "needles": ["joint fit of 260 rings has 1043 free parameters",
                          "above the cap of 1024"],
     "fix": "cmc --joint and fit --joint fit the joint NLSQ first: the same cap."},
    {"name": "rings_frames_differ", "klass": D,
     "make": rings_frames_differ(lambda d, p: validate(d, p, q="all")),
     "rc": 1, "needles": ["q rings with different frame counts", "ring q 0.02 1/A",
                          "20 frames", "ring q 0.01 1/A", "share one frame grid",
                          "rings.h5"],
     "fix": "The rings of one file share one frame grid (docs/input-formats.md): "
            "correlate every ring over the same frames, or write the rings to separate "
            "files."},
    {"name": "rings_frames_differ_nlsq", "klass": D,
     "make": rings_frames_differ(lambda d, p: rings_nlsq(d, p, q=[0.01])),
     "check": expect_nothing_written(),
     "rc": 1, "needles": ["q rings with different frame counts", "ring q 0.02 1/A"],
     "fix": "The whole file is refused, whichever ring is selected: correlate every ring "
            "over the same frames."},
    {"name": "rings_dt_per_ring", "klass": D, "make": rings_dt_per_ring,
     "rc": 1, "needles": ["frame_time", "should hold one number, not 2", "rings.h5"],
     "fix": "A file has one dt for all its rings (docs/input-formats.md); a dt per ring "
            "is not read: split the rings into files of their own."},
    {"name": "rings_all_angles_filtered_per_ring", "klass": D,
     "make": ring_all_filtered_fit(), "check": expect_nothing_written(),
     "rc": 1, "needles": ["no map left after φ filtering", "q = 0.02 ring"],
     "fix": "Checked for every selected ring before any ring is fitted: widen "
            "target_ranges, set fallback_to_all_angles, or leave that ring out of "
            "wavevector_q."},
    {"name": "rings_all_angles_filtered_joint", "klass": D,
     "make": ring_all_filtered_fit("--joint"), "check": expect_nothing_written(),
     "rc": 1, "needles": ["no map left after φ filtering", "q = 0.02 ring"],
     "fix": "A joint fit needs angles in every ring: widen target_ranges, or leave that "
            "ring out of wavevector_q."},
    {"name": "rings_range_only_ring_without_maps", "klass": D,
     "make": range_only_empty_ring,
     "rc": 1, "needles": ["no q ring of the file lies in", "{min: 0.015, max: 0.025}",
                          "q = 0.02 ring of the qmap", "no map"],
     "fix": "That ring was not correlated (no processed bin): widen the range to a ring "
            "with maps (`xpcsfit validate` lists them) or correlate it."},
    {"name": "simulate_q_duplicate", "klass": D, "make": sim_duplicate_q,
     "rc": 2, "needles": ["--q: 0.003 and 0.003 are the same q ring"], "check": no_sim_file,
     "fix": "Give each ring's q once."},
]
