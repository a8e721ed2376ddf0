"""xpcs_reference.py — an independent NumPy transcription of xpcsfit's model and NLSQ
objective (spec: model.md, nlsq.md, data.md), used to validate the C code and as the
SciPy speed reference of the benchmark.

Written from the spec only, not from the C sources, so that an error in one
transcription shows up as a disagreement instead of being copied. Everything is
vectorised over whole arrays: the per-frame rate integrals are O(N), the per-pair
quantities (diffusion factor, shear integral and their derivatives) are evaluated once
per frame pair and shared by all angles, as the spec's structure suggests.

Public pieces:
  model_c2_full(...)          full N x N c2 maps (diagonal included) for given parameters
  read_aps_u(path, ...)       a Dataset (q, phi_deg ascending, fitted upper-triangle points)
  Problem(dataset, mode, dt, L, per_angle='individual')
      .residuals(x), .jacobian(x), .bounds(), .names   — SciPy least_squares callables
      .covariance(x)  s^2 (J^T J)^-1 with s^2 = chi^2 / (n - p)
"""
import h5py
import numpy as np

# Floors and clips of model.md.
RATE_FLOOR = 1e-10
G1_FLOOR = 1e-10
I_SMOOTH = 1e-12
LOG_CLIP = -700.0
SINC_TAYLOR = 1e-4

STATIC_NAMES = ["D0", "alpha", "D_offset"]
LAMINAR_NAMES = STATIC_NAMES + ["gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"]

DEFAULT_BOUNDS = {
    "contrast": (0.0, 1.0),
    "offset": (0.5, 1.5),
    "D0": (1e2, 1e5),
    "alpha": (-2.0, 2.0),
    "D_offset": (-1e5, 1e5),
    "gamma_dot_t0": (1e-6, 0.5),
    "beta": (-2.0, 2.0),
    "gamma_dot_t_offset": (-0.1, 0.1),
    "phi0": (-10.0, 10.0),
}


def mode_names(mode):
    """Physical parameter names of an analysis mode (aliases as in model.md)."""
    if mode in ("static", "static_isotropic", "static_anisotropic"):
        return list(STATIC_NAMES)
    if mode == "laminar_flow":
        return list(LAMINAR_NAMES)
    raise ValueError(f"unknown analysis mode {mode!r}")


def floored_times(n_frames, dt_s):
    """t~_k: t_k = k dt floored at eps = max(|t1 - t0|/2, 1e-8) (1e-8 with one frame)."""
    t = np.arange(n_frames, dtype=np.float64) * dt_s
    eps = max(abs(t[1] - t[0]) / 2.0, 1e-8) if n_frames > 1 else 1e-8
    return np.where(t > eps, t, eps)


def rate_and_grad(tt, amp, expo, off):
    """f_k = amp t~^expo + off, floored at 1e-10 (derivative 0 where the floor is active).
    Returns f (N,) and df/d(amp, expo, off) as (N, 3)."""
    tp = tt ** expo
    f = amp * tp + off
    g = np.empty((tt.size, 3))
    g[:, 0] = tp
    g[:, 1] = amp * tp * np.log(tt)
    g[:, 2] = 1.0
    floor = f <= RATE_FLOOR
    f = np.where(floor, RATE_FLOOR, f)
    g[floor, :] = 0.0
    return f, g


def cumtrapz(f):
    """C_0 = 0, C_k = sum_{m<k} (f_m + f_{m+1})/2, in grid steps; works along axis 0."""
    half = 0.5 * (f[:-1] + f[1:])
    out = np.zeros((f.shape[0],) + f.shape[1:])
    out[1:] = np.cumsum(half, axis=0)
    return out


def sinc_and_deriv(x):
    """Unnormalised sinc and its derivative with the Taylor branch below |x| = 1e-4."""
    small = np.abs(x) < SINC_TAYLOR
    xs = np.where(small, 1.0, x)
    s, c = np.sin(xs), np.cos(xs)
    sinc = np.where(small, 1.0 - x * x / 6.0 + x ** 4 / 120.0, s / xs)
    dsinc = np.where(small, -x / 3.0 + x ** 3 / 30.0, c / xs - s / (xs * xs))
    return sinc, dsinc


def pair_integral(C, dC, i, j):
    """I_ij = sqrt((C_i - C_j)^2 + 1e-12) and dI_ij/dtheta for index arrays i, j."""
    d = C[i] - C[j]
    I = np.sqrt(d * d + I_SMOOTH)
    dI = (d / I)[:, None] * (dC[i] - dC[j])
    return I, dI


class PairModel:
    """g1 of the model on a fixed set of frame pairs (i, j) and angles.

    theta: physical parameters in the mode's canonical order. g1 per angle and its
    derivative with respect to theta are what both the maps and the residuals need."""

    def __init__(self, mode, q, dt_s, L, phi_deg, n_frames, i, j):
        self.names = mode_names(mode)
        self.laminar = len(self.names) == 7
        self.q, self.dt, self.L = float(q), float(dt_s), float(L)
        self.phi = np.asarray(phi_deg, dtype=np.float64)
        self.i = np.asarray(i, dtype=np.intp)
        self.j = np.asarray(j, dtype=np.intp)
        self.tt = floored_times(n_frames, dt_s)
        self.w = 0.5 * self.q * self.q * self.dt
        self.s = self.q * self.L * self.dt / (2.0 * np.pi)

    def g1(self, theta, want_grad=True):
        """g1 (n_phi, n_pairs) and, if asked, dg1/dtheta (n_phi, n_pairs, n_theta)."""
        th = np.asarray(theta, dtype=np.float64)
        nth = len(self.names)
        npair = self.i.size
        fD, gD = rate_and_grad(self.tt, th[0], th[1], th[2])
        CD, dCD = cumtrapz(fD), cumtrapz(gD)
        ID, dID = pair_integral(CD, dCD, self.i, self.j)
        logD = -self.w * ID
        clipped = logD < LOG_CLIP
        g1D = np.exp(np.clip(logD, LOG_CLIP, 0.0))
        dg1D = np.zeros((npair, nth))
        dg1D[:, 0:3] = (-self.w * g1D)[:, None] * dID
        dg1D[clipped, :] = 0.0
        nphi = self.phi.size
        if not self.laminar:
            g1 = np.broadcast_to(g1D, (nphi, npair))
            under = g1 < G1_FLOOR
            g1 = np.where(under, G1_FLOOR, g1)
            if not want_grad:
                return g1, None
            dg1 = np.broadcast_to(dg1D, (nphi, npair, nth)).copy()
            dg1[under, :] = 0.0
            return g1, dg1
        fG, gG = rate_and_grad(self.tt, th[3], th[4], th[5])
        CG, dCG = cumtrapz(fG), cumtrapz(gG)
        IG, dIG = pair_integral(CG, dCG, self.i, self.j)
        g1 = np.empty((nphi, npair))
        dg1 = np.empty((nphi, npair, nth)) if want_grad else None
        ang = (th[6] - self.phi) * (np.pi / 180.0)
        for k in range(nphi):
            cs, sn = np.cos(ang[k]), np.sin(ang[k])
            Phi = self.s * cs * IG
            sc, dsc = sinc_and_deriv(Phi)
            g1S = sc * sc
            gk = g1D * g1S
            under = gk < G1_FLOOR
            g1[k] = np.where(under, G1_FLOOR, gk)
            if not want_grad:
                continue
            dS = 2.0 * sc * dsc  # dg1S/dPhi
            dg = dg1[k]
            dg[:, 0:3] = dg1D[:, 0:3] * g1S[:, None]
            dg[:, 3:6] = (g1D * dS * self.s * cs)[:, None] * dIG
            dg[:, 6] = g1D * dS * (-self.s * sn * (np.pi / 180.0) * IG)
            dg[under, :] = 0.0
        return g1, dg1


def model_c2_full(mode, q, dt_s, L, phi_deg, n_frames, theta, contrast, offset):
    """Full (n_phi, N, N) c2 maps including the diagonal (I_ii = 1e-6)."""
    iu, ju = np.triu_indices(n_frames)
    pm = PairModel(mode, q, dt_s, L, phi_deg, n_frames, iu, ju)
    g1, _ = pm.g1(theta, want_grad=False)
    con = np.broadcast_to(np.asarray(contrast, dtype=np.float64), (pm.phi.size,))
    off = np.broadcast_to(np.asarray(offset, dtype=np.float64), (pm.phi.size,))
    out = np.empty((pm.phi.size, n_frames, n_frames))
    for k in range(pm.phi.size):
        c = off[k] + con[k] * g1[k] * g1[k]
        m = np.zeros((n_frames, n_frames))
        m[iu, ju] = c
        m[ju, iu] = c
        out[k] = m
    return out


# ---------------------------------------------------------------- data (data.md)

class Dataset:
    """What a fit sees: the q of the ring, ascending angles, and per angle the fitted
    points c2[i, j] with 1 <= i < j < N (frame indices relative to the first kept frame)."""

    def __init__(self, q, phi_deg, n_frames, i, j, values):
        self.q = q
        self.phi = phi_deg
        self.n_frames = n_frames
        self.i, self.j = i, j
        self.values = values  # (n_phi, n_pairs)

    @property
    def n_points(self):
        return self.values.size


def fitted_pairs(n_frames):
    """Upper triangle without the t = 0 row/column and the diagonal."""
    i, j = np.triu_indices(n_frames, k=1)
    keep = i >= 1
    return i[keep], j[keep]


def full_from_triangle(h):
    """data.md: C = H + H^T with the diagonal halved, unless the map is already full."""
    up = np.any(np.triu(h, 1) != 0)
    lo = np.any(np.tril(h, -1) != 0)
    if up and lo:
        return h.copy()
    c = h + h.T
    c[np.diag_indices_from(c)] *= 0.5
    return c


def normalise_phi(p):
    p = np.mod(np.asarray(p, dtype=np.float64), 360.0)
    return np.where(p > 180.0, p - 360.0, p)


def read_aps_u(path, q_target=None, start_frame=1, end_frame=-1):
    """Read an APS-U file with h5py (the q ring nearest q_target, frames start..end,
    1-based inclusive) into a Dataset. Independent of xpcsfit's C reader."""
    with h5py.File(path, "r") as f:
        qs = np.asarray(f["/xpcs/qmap/dynamic_v_list_dim0"][()], dtype=np.float64).ravel()
        ph = np.asarray(f["/xpcs/qmap/dynamic_v_list_dim1"][()], dtype=np.float64).ravel()
        bins = np.asarray(f["/xpcs/twotime/processed_bins"][()]).ravel().astype(int)
        mapping = None
        if "/xpcs/qmap/dynamic_index_mapping" in f:
            mapping = np.asarray(f["/xpcs/qmap/dynamic_index_mapping"][()]).ravel().astype(int)
        grp = f["/xpcs/twotime/correlation_map"]
        qn = qs[np.argmin(np.abs(qs - q_target))] if q_target is not None else qs[0]
        sel = []
        for k, b in enumerate(bins):
            flat = mapping[b - 1] if mapping is not None else b - 1
            qi, pi = divmod(int(flat), ph.size)
            if abs(qs[qi] - qn) <= 1e-6 * qn:
                sel.append((float(normalise_phi(ph[pi])), f"c2_{k + 1:05d}"))
        sel.sort()
        maps = [np.asarray(grp[name][()], dtype=np.float64) for _, name in sel]
    n_all = maps[0].shape[0]
    a = max(start_frame, 1) - 1
    b = n_all if end_frame == -1 else min(end_frame, n_all)
    n = b - a
    i, j = fitted_pairs(n)
    vals = np.empty((len(maps), i.size))
    for k, h in enumerate(maps):
        c = full_from_triangle(h)[a:b, a:b]
        vals[k] = c[i, j]
    return Dataset(float(qn), np.array([p for p, _ in sel]), n, i, j, vals)


# ---------------------------------------------------------------- NLSQ objective

def quantile_scaling(ds):
    """nlsq.md's quantile estimate of (contrast, offset) per angle (default bounds)."""
    lag = (ds.j - ds.i).astype(np.float64)
    con, off = [], []
    for k in range(ds.values.shape[0]):
        c = ds.values[k]
        if c.size < 100:
            con.append(0.5)
            off.append(1.0)
            continue
        hi = lag >= np.percentile(lag, 80)
        lo = lag <= np.percentile(lag, 20)
        o = np.percentile(c[hi] if hi.sum() >= 10 else c, 10)
        ceil = np.percentile(c[lo] if lo.sum() >= 10 else c, 90)
        o = min(max(o, 0.5), 1.5)
        cc = min(max(ceil - o, 0.0), 1.0)
        con.append(cc)
        off.append(o)
    return np.array(con), np.array(off)


class Problem:
    """The NLSQ objective r = (c2_data - c2_model)/sigma over a Dataset.

    Parameter vector (individual per-angle scaling, the simplest of nlsq.md's modes):
    [theta..., contrast_0..contrast_{n-1}, offset_0..offset_{n-1}];
    per_angle='shared': [theta..., contrast, offset] (one pair for all angles)."""

    def __init__(self, ds, mode, dt_s, L=2.0e6, per_angle="individual", sigma=1.0):
        self.ds = ds
        self.pm = PairModel(mode, ds.q, dt_s, L, ds.phi, ds.n_frames, ds.i, ds.j)
        self.nth = len(self.pm.names)
        self.nphi = ds.phi.size
        self.per_angle = per_angle
        self.sigma = float(sigma)
        if per_angle == "individual":
            self.names = self.pm.names + [f"contrast_{k}" for k in range(self.nphi)] + \
                [f"offset_{k}" for k in range(self.nphi)]
        elif per_angle == "shared":
            self.names = self.pm.names + ["contrast", "offset"]
        else:
            raise ValueError(per_angle)
        self._cache_x = None
        self._cache = None

    def pack(self, theta, contrast, offset):
        if self.per_angle == "individual":
            con = np.broadcast_to(np.asarray(contrast, dtype=float), (self.nphi,))
            off = np.broadcast_to(np.asarray(offset, dtype=float), (self.nphi,))
            return np.concatenate([np.asarray(theta, dtype=float), con, off])
        return np.concatenate([np.asarray(theta, dtype=float),
                               [np.mean(contrast), np.mean(offset)]])

    def split(self, x):
        th = x[:self.nth]
        if self.per_angle == "individual":
            return th, x[self.nth:self.nth + self.nphi], x[self.nth + self.nphi:]
        return th, np.full(self.nphi, x[self.nth]), np.full(self.nphi, x[self.nth + 1])

    def bounds(self):
        lo, hi = [], []
        for n in self.names:
            b = DEFAULT_BOUNDS[n.split("_")[0] if n.startswith(("contrast", "offset")) else n]
            lo.append(b[0])
            hi.append(b[1])
        return np.array(lo), np.array(hi)

    def _eval(self, x):
        # least_squares calls fun then jac at the same x: evaluate g1 and its gradient once.
        if self._cache_x is not None and np.array_equal(x, self._cache_x):
            return self._cache
        self._cache = self.pm.g1(self.split(x)[0], want_grad=True)
        self._cache_x = np.array(x, copy=True)
        return self._cache

    def model(self, x):
        th, con, off = self.split(np.asarray(x, dtype=float))
        g1, _ = self._eval(np.asarray(x, dtype=float))
        return off[:, None] + con[:, None] * g1 * g1

    def residuals(self, x):
        return ((self.ds.values - self.model(x)) / self.sigma).ravel()

    def jacobian(self, x):
        """d r / d x, dense (n_points, p), rows in the order of residuals()."""
        x = np.asarray(x, dtype=float)
        th, con, off = self.split(x)
        g1, dg1 = self._eval(x)
        npair = g1.shape[1]
        J = np.zeros((self.nphi, npair, len(self.names)))
        inv = -1.0 / self.sigma
        J[:, :, :self.nth] = (inv * 2.0 * con[:, None] * g1)[:, :, None] * dg1
        g2 = g1 * g1
        for k in range(self.nphi):
            if self.per_angle == "individual":
                J[k, :, self.nth + k] = inv * g2[k]
                J[k, :, self.nth + self.nphi + k] = inv
            else:
                J[k, :, self.nth] = inv * g2[k]
                J[k, :, self.nth + 1] = inv
        return J.reshape(self.nphi * npair, len(self.names))

    def chi_squared(self, x):
        r = self.residuals(x)
        return float(r @ r)

    def covariance(self, x):
        """s^2 (J^T J)^-1 with s^2 = chi^2/(n - p) (sigma unknown, nlsq.md)."""
        J = self.jacobian(x)
        r = self.residuals(x)
        n, p = J.shape
        s2 = float(r @ r) / (n - p)
        return s2 * np.linalg.inv(J.T @ J)
