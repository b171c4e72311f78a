"""Extreme-value tail models: peaks over threshold with a generalised Pareto distribution (GPD).

Conventions follow Coles, *An Introduction to Statistical Modeling of Extreme Values* (2001), §4:

- exceedances y = x - u of the observations x > u; k of them among n observations, zeta_u = k / n;
- GPD G(y; sigma, xi) = 1 - (1 + xi y / sigma)^(-1/xi)  (scipy.stats.genpareto with c = xi);
- the m-observation return level (exceeded on average once every m observations)
      x_m = u + sigma / xi * ((m zeta_u)^xi - 1)          (xi != 0)
      x_m = u + sigma * log(m zeta_u)                     (xi == 0)
- delta-method variance Var(x_m) = grad^T V grad over (zeta_u, sigma, xi), Var(zeta_u) =
  zeta_u (1 - zeta_u) / n, (sigma, xi) block from the inverse (observed or expected) information;
- profile-likelihood interval of x_m: reparameterise sigma by x_m and maximise over xi.

Fitting uses scipy.stats.genpareto.fit (location fixed at 0); the covariance is the inverse of the
observed information (numerical Hessian of the negative log-likelihood), with the expected
information (1+xi)/k [[2 sigma^2, -sigma], [-sigma, 1+xi]] as fallback and for fits known only from
printed parameters.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import brentq, minimize, minimize_scalar
from scipy.stats import chi2, genpareto, norm

_XI_ZERO = 1e-9


# -- the GPD likelihood ----------------------------------------------------------------------------

def gpd_nll(sigma: float, xi: float, y: np.ndarray) -> float:
    """Negative log-likelihood of exceedances y under GPD(sigma, xi); +inf outside the support."""
    y = np.asarray(y, dtype=np.float64)
    if sigma <= 0 or not np.isfinite(sigma) or not np.isfinite(xi):
        return math.inf
    k = y.size
    w = y / sigma
    if abs(xi) < _XI_ZERO:
        # (1 + 1/xi) log1p(xi w) to first order in xi (the next term, xi^2 (w^3/3 - w^2/2), is below 1e-16 of
        # the nll for exceedances within 10 scales): the exponential's nll at 0, and the slope that a central
        # difference across the band needs
        return k * math.log(sigma) + float(np.sum(w + xi * (w - 0.5 * w * w)))
    t = xi * w
    if np.any(t <= -1.0):
        return math.inf
    # log1p: log(1 + xi w) loses all but log10(xi w / 1e-16) digits for shapes near 0, which the 1/xi before it
    # then magnifies (the Hessian's xi-xi entry was 47 % low at xi = 0 and 85 % high at 1e-7 with log)
    return k * math.log(sigma) + (1.0 + 1.0 / xi) * float(np.log1p(t).sum())


NO_COVARIANCE = "none (xi < -1: the likelihood is unbounded at the support's end)"


def expected_information_cov(sigma: float, xi: float, k: int) -> np.ndarray:
    """Asymptotic covariance of (sigma_hat, xi_hat) from the expected information (xi > -0.5)."""
    return (1.0 + xi) / k * np.array([[2.0 * sigma**2, -sigma], [-sigma, 1.0 + xi]])


def _numerical_hessian(f, x: np.ndarray, floor: np.ndarray, rel_step: float = 1e-4) -> np.ndarray:
    """Central second differences with steps rel_step * max(|x|, floor) (floor per parameter)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    h = rel_step * np.maximum(np.abs(x), floor)
    H = np.empty((n, n))
    f0 = f(x)
    for i in range(n):
        ei = np.zeros(n)
        ei[i] = h[i]
        H[i, i] = (f(x + ei) - 2 * f0 + f(x - ei)) / h[i] ** 2
        for j in range(i + 1, n):
            ej = np.zeros(n)
            ej[j] = h[j]
            H[i, j] = H[j, i] = (
                f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)
            ) / (4 * h[i] * h[j])
    return H


# -- a fitted (or printed) peaks-over-threshold model ---------------------------------------------

@dataclass(frozen=True)
class PotModel:
    """Peaks-over-threshold model: threshold u, GPD (sigma, xi), k exceedances of n observations."""

    threshold: float
    sigma: float
    xi: float
    n_exceed: int
    n_total: int
    cov: np.ndarray = field(repr=False)  # 2x2 covariance of (sigma, xi)
    loglik: float | None = None
    method: str = "mle"
    cov_method: str = "observed information"

    @property
    def zeta(self) -> float:
        return self.n_exceed / self.n_total

    @property
    def se_sigma(self) -> float:
        return float(math.sqrt(self.cov[0, 0]))

    @property
    def se_xi(self) -> float:
        return float(math.sqrt(self.cov[1, 1]))

    def wald_ci(self, alpha: float = 0.05) -> dict[str, tuple[float, float]]:
        z = float(norm.ppf(1 - alpha / 2))
        return {
            "sigma": (self.sigma - z * self.se_sigma, self.sigma + z * self.se_sigma),
            "xi": (self.xi - z * self.se_xi, self.xi + z * self.se_xi),
        }

    @property
    def upper_endpoint(self) -> float:
        """Finite upper end of the fitted tail when xi < 0 (u - sigma/xi), else +inf."""
        return self.threshold - self.sigma / self.xi if self.xi < 0 else math.inf

    def return_level(self, m: float) -> float:
        return return_level(self.threshold, self.sigma, self.xi, self.zeta, m)

    def return_level_delta(self, m: float, alpha: float = 0.05) -> ReturnLevel:
        return return_level_delta_ci(self, m, alpha)


@dataclass(frozen=True)
class ReturnLevel:
    m: float
    level: float
    low: float
    high: float
    se: float | None
    method: str


def return_level(u: float, sigma: float, xi: float, zeta: float, m: float | np.ndarray):
    """m-observation return level u + sigma/xi ((m zeta)^xi - 1) (Coles eq. 4.13)."""
    mz = np.asarray(m, dtype=np.float64) * zeta
    if abs(xi) < _XI_ZERO:
        out = u + sigma * np.log(mz)
    else:  # expm1: (m zeta)^xi - 1 without cancellation for small xi
        out = u + sigma * np.expm1(xi * np.log(mz)) / xi
    return float(out) if np.ndim(out) == 0 else out


def return_level_gradient(sigma: float, xi: float, zeta: float, m: float) -> np.ndarray:
    """d x_m / d (zeta, sigma, xi)."""
    mz = m * zeta
    log_mz = math.log(mz)
    if abs(xi) < _XI_ZERO:
        return np.array([sigma / zeta, log_mz, 0.5 * sigma * log_mz**2])
    t = xi * log_mz
    e = math.expm1(t)  # (m zeta)^xi - 1
    d_zeta = sigma * m**xi * zeta ** (xi - 1.0)
    d_sigma = e / xi
    # d/dxi of sigma e / xi is sigma (t e^t - e) / xi^2; t e^t - e = t^2/2 + t^3/3 + t^4/8 + ... cancels to nothing
    # for small t (at xi = 2e-9 the direct formula gave 44.6 instead of 468.8), so its series is used there
    if abs(t) < 1e-3:
        f = t * t * (1 / 2 + t * (1 / 3 + t * (1 / 8 + t * (1 / 30 + t * (1 / 144 + t / 840)))))
    else:
        f = t * (e + 1.0) - e
    d_xi = sigma * f / xi**2
    return np.array([d_zeta, d_sigma, d_xi])


def return_level_delta_ci(model: PotModel, m: float, alpha: float = 0.05) -> ReturnLevel:
    """Return level with a delta-method confidence interval (Coles §4.3.3)."""
    V = np.zeros((3, 3))
    V[0, 0] = model.zeta * (1.0 - model.zeta) / model.n_total
    V[1:, 1:] = model.cov
    g = return_level_gradient(model.sigma, model.xi, model.zeta, m)
    var = float(g @ V @ g)
    if not (math.isfinite(var) and var >= 0):
        level = model.return_level(m)
        return ReturnLevel(m=m, level=level, low=math.nan, high=math.nan, se=None,
                           method=f"delta method not applicable (variance {var:.3g} from {model.cov_method})")
    se = math.sqrt(var)
    z = float(norm.ppf(1 - alpha / 2))
    level = model.return_level(m)
    return ReturnLevel(m=m, level=level, low=level - z * se, high=level + z * se, se=se,
                       method=f"delta method ({model.cov_method})")


# -- building models --------------------------------------------------------------------------------

def exceedances(data: np.ndarray, threshold: float) -> np.ndarray:
    x = np.asarray(data, dtype=np.float64)
    return x[x > threshold] - threshold


def fit_gpd(data: np.ndarray, threshold: float, n_total: int | None = None) -> PotModel:
    """Maximum-likelihood GPD fit to the exceedances of `data` over `threshold`.

    n_total: the number of observations the data stand for (default: len(data)); pass it when
    `data` holds only the tail (e.g. the worst N packets of a run).
    """
    x = np.asarray(data, dtype=np.float64)
    y = exceedances(x, threshold)
    k = int(y.size)
    if k < 10:
        raise ValueError(f"only {k} exceedances of threshold {threshold}: too few to fit a GPD (need >= 10)")
    n = int(n_total if n_total is not None else x.size)
    # moment estimates as the starting point; scipy's optimiser then maximises the likelihood
    mean, var = float(y.mean()), float(y.var())
    xi0 = 0.5 * (1.0 - mean**2 / var) if var > 0 else 0.0
    xi0 = float(np.clip(xi0, -0.45, 0.45))
    sigma0 = max(mean * (1.0 - xi0), 1e-12)
    c, _loc, scale = genpareto.fit(y, xi0, loc=0.0, scale=sigma0, floc=0.0)
    sigma, xi = float(scale), float(c)
    # polish: scipy's Nelder-Mead stops early on large samples

    res = minimize(lambda p: min(gpd_nll(p[0], p[1], y), 1e300), x0=[sigma, xi], method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-10, "maxiter": 4000})
    if res.fun <= gpd_nll(sigma, xi, y):
        sigma, xi = float(res.x[0]), float(res.x[1])
    nll = gpd_nll(sigma, xi, y)
    if xi < -1.0:
        # the likelihood grows without bound as the support's end approaches the largest exceedance (Smith 1985):
        # the estimate is that endpoint, and neither information matrix is an asymptotic covariance
        warnings.warn(f"GPD fit over threshold {threshold:g}: xi = {xi:.4g} < -1, where the likelihood is unbounded at "
                      "the support's end (Smith 1985): the fitted upper endpoint is the largest exceedance, and there "
                      "are no standard errors, Wald or delta-method intervals", stacklevel=2)
        return PotModel(threshold=float(threshold), sigma=sigma, xi=xi, n_exceed=k, n_total=n,
                        cov=np.full((2, 2), math.nan), loglik=-nll, method="mle", cov_method=NO_COVARIANCE)
    cov, cov_method = None, "observed information"
    try:
        # sigma's step relative to sigma alone (it carries the data's unit: a floor of 1e-2 made the step of a
        # sigma of 2e-6 s half of it); xi's has a floor for shapes near 0
        H = _numerical_hessian(lambda p: gpd_nll(p[0], p[1], y), np.array([sigma, xi]), np.array([0.0, 1e-2]))
        cov = np.linalg.inv(H)
        if not (np.all(np.isfinite(cov)) and np.all(np.linalg.eigvalsh(0.5 * (cov + cov.T)) > 0)):
            cov = None  # not at an interior maximum (e.g. xi <= -0.5): no observed information
    except np.linalg.LinAlgError:
        cov = None
    if cov is None:
        cov, cov_method = expected_information_cov(sigma, xi, k), "expected information"
    return PotModel(threshold=float(threshold), sigma=sigma, xi=xi, n_exceed=k, n_total=n, cov=cov,
                    loglik=-nll, method="mle", cov_method=cov_method)


def from_printed(threshold: float, sigma: float, xi: float, n_exceed: int, n_total: int,
                 ci_sigma: tuple[float, float] | None = None, ci_xi: tuple[float, float] | None = None,
                 alpha: float = 0.05) -> PotModel:
    """A model known only from printed parameters (no data).

    Without printed intervals the covariance is the expected information at (sigma, xi) for k
    exceedances. With printed symmetric (Wald) intervals, their standard errors are used and the
    correlation is taken from the expected information (papers rarely print it).
    """
    cov = expected_information_cov(sigma, xi, n_exceed)
    method = "expected information"
    if ci_sigma is not None and ci_xi is not None:
        z = float(norm.ppf(1 - alpha / 2))
        se_s = (ci_sigma[1] - ci_sigma[0]) / (2 * z)
        se_x = (ci_xi[1] - ci_xi[0]) / (2 * z)
        corr = cov[0, 1] / math.sqrt(cov[0, 0] * cov[1, 1])
        cov = np.array([[se_s**2, corr * se_s * se_x], [corr * se_s * se_x, se_x**2]])
        method = "printed Wald intervals, expected-information correlation"
    return PotModel(threshold=float(threshold), sigma=float(sigma), xi=float(xi), n_exceed=int(n_exceed),
                    n_total=int(n_total), cov=cov, loglik=None, method="printed parameters",
                    cov_method=method)


# -- profile likelihood ---------------------------------------------------------------------------

def _profile_nll_at(level: float, u: float, zeta: float, m: float, y: np.ndarray,
                    xi_bounds: tuple[float, float]) -> float:
    """min over xi of the nll with sigma expressed through the return level."""
    mz = m * zeta
    d = level - u
    if d <= 0:
        return math.inf

    def nll_xi(xi: float) -> float:
        if abs(xi) < _XI_ZERO:
            sigma = d / math.log(mz)
        else:
            sigma = d * xi / (mz**xi - 1.0)
        return gpd_nll(sigma, xi, y)

    grid = np.linspace(xi_bounds[0], xi_bounds[1], 61)
    vals = np.array([nll_xi(x) for x in grid])
    if not np.any(np.isfinite(vals)):
        return math.inf
    i = int(np.nanargmin(np.where(np.isfinite(vals), vals, np.inf)))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(nll_xi, bounds=(lo, hi), method="bounded", options={"xatol": 1e-8})
    return float(min(res.fun, vals[i]))


def return_level_profile_ci(data: np.ndarray, threshold: float, m: float, n_total: int | None = None,
                            alpha: float = 0.05, xi_bounds: tuple[float, float] = (-0.95, 1.5)) -> ReturnLevel:
    """Return level with a profile-likelihood interval (Coles §4.3.3; zeta_u held at k/n).

    Needs the data: the interval is where 2 (l_max - l_p(x_m)) <= chi2_1(1 - alpha), the profile taken over xi
    in xi_bounds. A ValueError that says so when the fitted xi lies so far outside xi_bounds that even the
    fitted level is outside (no interval around it).
    """
    with warnings.catch_warnings(), np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # the optimiser probes outside the support
        return _profile_ci(data, threshold, m, n_total, alpha, xi_bounds)


def _profile_ci(data, threshold, m, n_total, alpha, xi_bounds) -> ReturnLevel:
    if not -1.0 <= xi_bounds[0] < xi_bounds[1]:
        # below xi = -1 the GPD likelihood is unbounded at the support's end (Coles §2.6.4): a profile minimum
        # there is wherever the search stops, not an estimate
        raise ValueError(f"xi_bounds {tuple(xi_bounds)}: expected -1 <= lower < upper (below xi = -1 the "
                         "likelihood is unbounded, Coles §2.6.4)")
    model = fit_gpd(data, threshold, n_total)
    if not m * model.zeta > 1.0:
        raise ValueError(f"return period m = {m:g} is not beyond the threshold: m * zeta = {m * model.zeta:g} <= 1 "
                         f"(zeta = {model.n_exceed}/{model.n_total} exceedances), so the return level is at or below "
                         "the threshold, where the exceedances' GPD says nothing")
    y = exceedances(data, threshold)
    best = model.return_level(m)
    nll_max = -model.loglik
    crit = 0.5 * float(chi2.ppf(1 - alpha, 1))
    u, zeta = model.threshold, model.zeta

    def g(level: float) -> float:
        return _profile_nll_at(level, u, zeta, m, y, xi_bounds) - nll_max - crit

    if not g(best) <= 0:
        # the profile over xi in xi_bounds stays so far below the likelihood's maximum (a fitted xi outside the
        # bounds) that even the fitted level is outside: there is no interval around it to search from
        raise ValueError(f"the fitted shape xi = {model.xi:.4g} lies outside xi_bounds {tuple(xi_bounds)} and the "
                         "profile likelihood at the fitted return level is already beyond the critical value: no "
                         "profile-likelihood interval (below xi = -1 the likelihood is irregular, Coles §2.6.4; "
                         "widen xi_bounds or use the delta-method interval)")
    scale = max(model.sigma, 1e-9)
    # lower end: step down from the estimate until the profile drops below the critical value
    lo_hi = best
    step = scale
    lo = best - step
    lower = math.nan
    # steps doubling from one scale: down, they reach the threshold after about log2((best - u) / scale) of them;
    # up, 60 more go 2^60 times as far above the estimate as it lies above the threshold
    doublings = math.ceil(math.log2(max((best - u) / scale, 1.0))) + 60
    for _ in range(doublings):
        at_threshold = lo <= u
        if at_threshold:
            lo = u + 1e-9 * scale
        val = g(lo)
        if not math.isfinite(val):  # no feasible GPD with this return level: bisect to the edge
            lower = _bisect_inf(g, lo, lo_hi)
            break
        if val > 0:
            lower = brentq(g, lo, lo_hi, xtol=1e-9 * scale)
            break
        if at_threshold:  # the interval reaches down to the threshold itself
            lower = lo
            break
        lo_hi = lo
        step *= 2
        lo = best - step
    hi_lo = best
    step = scale
    hi = best + step
    upper = math.inf
    for _ in range(doublings):
        val = g(hi)
        if math.isfinite(val) and val > 0:
            upper = brentq(g, hi_lo, hi, xtol=1e-9 * scale)
            break
        hi_lo = hi
        step *= 2
        hi = best + step
    return ReturnLevel(m=m, level=best, low=float(lower), high=float(upper), se=None,
                       method="profile likelihood")


def _bisect_inf(g, bad: float, good: float, iters: int = 100) -> float:
    """Boundary between an infeasible/above-critical point `bad` and a feasible point `good`."""
    for _ in range(iters):
        mid = 0.5 * (bad + good)
        v = g(mid)
        if math.isfinite(v) and v <= 0:
            good = mid
        else:
            bad = mid
    return good


# -- threshold choice aids ------------------------------------------------------------------------

def mean_excess(data: np.ndarray, thresholds: Sequence[float] | None = None, alpha: float = 0.05,
                min_exceed: int = 5):
    """Mean residual life plot data: for each u, mean(x - u | x > u) with a normal CI.

    Returns a DataFrame(threshold, mean_excess, ci_low, ci_high, n_exceed); a threshold with fewer than
    `min_exceed` (at least 1) exceedances has no row."""
    if min_exceed < 1:
        raise ValueError(f"min_exceed must be at least 1 (a mean of no exceedance is undefined), got {min_exceed}")
    x = np.sort(np.asarray(data, dtype=np.float64))
    if x.size == 0:
        raise ValueError("mean_excess of no data")
    if thresholds is None:
        thresholds = np.linspace(x[0], x[-1], 200)
    z = float(norm.ppf(1 - alpha / 2))
    rows = []
    # suffix sums make this O(n + t log n); a row has k >= 1 exceedances, so i < n
    csum = np.cumsum(x[::-1])[::-1]
    csq = np.cumsum((x**2)[::-1])[::-1]
    for u in thresholds:
        i = int(np.searchsorted(x, u, side="right"))
        k = x.size - i
        if k < min_exceed:
            continue
        s1 = csum[i] - k * u
        s2 = csq[i] - 2 * u * csum[i] + k * u * u
        me = s1 / k
        var = max((s2 - k * me * me) / (k - 1), 0.0) if k > 1 else 0.0
        half = z * math.sqrt(var / k)
        rows.append({"threshold": float(u), "mean_excess": me, "ci_low": me - half, "ci_high": me + half,
                     "n_exceed": k})
    return pd.DataFrame(rows)


def parameter_stability(data: np.ndarray, thresholds: Sequence[float], n_total: int | None = None,
                        alpha: float = 0.05):
    """GPD fits over a range of thresholds: modified scale sigma* = sigma - xi u and xi, with Wald
    intervals; both should be roughly constant above a valid threshold (Coles §4.3.4)."""
    z = float(norm.ppf(1 - alpha / 2))
    rows = []
    for u in thresholds:
        try:
            fit = fit_gpd(data, u, n_total)
        except ValueError:
            continue
        grad = np.array([1.0, -u])
        se_star = float(math.sqrt(max(grad @ fit.cov @ grad, 0.0)))
        s_star = fit.sigma - fit.xi * u
        rows.append({"threshold": float(u), "n_exceed": fit.n_exceed, "xi": fit.xi,
                     "xi_low": fit.xi - z * fit.se_xi, "xi_high": fit.xi + z * fit.se_xi,
                     "sigma_star": s_star, "sigma_star_low": s_star - z * se_star,
                     "sigma_star_high": s_star + z * se_star})
    return pd.DataFrame(rows)


# -- dependence: clusters of exceedances ----------------------------------------------------------

def decluster_by_gap(t: np.ndarray, x: np.ndarray, threshold: float, gap: float):
    """Runs declustering on time stamps (Coles §5.3.2 with a time gap instead of a count of
    non-exceedances): exceedances of `threshold` closer than `gap` in time belong to one cluster.

    Returns a DataFrame(start, end, size, max, t_max), one row per cluster, in time order. The
    ratio n_clusters / n_exceedances estimates the extremal index (1: no clustering)."""
    t = np.asarray(t, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if t.shape != x.shape:
        raise ValueError(f"t has shape {t.shape}, x has shape {x.shape}")
    sel = x > threshold
    te, xe = t[sel], x[sel]
    order = np.argsort(te, kind="stable")
    te, xe = te[order], xe[order]
    if te.size == 0:
        return pd.DataFrame(columns=["start", "end", "size", "max", "t_max"])
    new = np.concatenate([[True], np.diff(te) > gap])
    cid = np.cumsum(new) - 1
    n = int(cid[-1] + 1)
    size = np.bincount(cid, minlength=n)
    starts = te[new]
    ends = np.concatenate([te[np.flatnonzero(new)[1:] - 1], [te[-1]]])
    mx = np.full(n, -np.inf)
    np.maximum.at(mx, cid, xe)
    # time of each cluster's maximum: the first exceedance in the cluster equal to it
    is_max = xe == mx[cid]
    first = np.full(n, -1)
    idx = np.flatnonzero(is_max)
    first[cid[idx[::-1]]] = idx[::-1]
    return pd.DataFrame({"start": starts, "end": ends, "size": size, "max": mx, "t_max": te[first]})
