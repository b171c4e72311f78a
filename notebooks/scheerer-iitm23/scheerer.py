"""Section 4 of the paper from its printed parameters: the verdict rows this paper's entry checks.

The paper prints its parameters but not its data (1264 latencies of one flow): the return level and
its delta-method interval are recomputed from the printed (u, k, n, sigma, xi) and the printed Wald
intervals of sigma and xi; the MLE itself, the observed-information covariance and a profile-
likelihood interval need the 42 exceedances and are reported as not derivable. The printed numbers
come from the entry's [parameters] (scheerer-iitm23-return-level.toml), never from here.
"""

from __future__ import annotations

from typing import Any

from benchbook.analysis import evt


def paper_models(p: dict[str, Any]) -> tuple[evt.PotModel, evt.PotModel]:
    """(model with the paper's printed Wald SEs, model with expected-information covariance)."""
    printed = evt.from_printed(p["u_us"], p["sigma_us"], p["xi"], p["n_exceed"], p["n_total"],
                               ci_sigma=tuple(p["ci_sigma"]), ci_xi=tuple(p["ci_xi"]))
    expected = evt.from_printed(p["u_us"], p["sigma_us"], p["xi"], p["n_exceed"], p["n_total"])
    return printed, expected


def paper_verdict(verdict, p: dict[str, Any]) -> dict[str, Any]:
    """Add the §4 rows to the verdict; return the computed numbers."""
    printed, expected = paper_models(p)
    m = p["m"]
    rl = printed.return_level_delta(m)
    rl_exp = expected.return_level_delta(m)
    wald = expected.wald_ci()
    src = "§4 printed parameters"
    verdict.notes.append(f"inputs (printed in §4): u={p['u_us']} µs, k={p['n_exceed']}, n={p['n_total']}, "
                         f"sigma={p['sigma_us']} µs, xi={p['xi']}, Wald 95 % CIs sigma {list(p['ci_sigma'])}, "
                         f"xi {list(p['ci_xi'])}, m={p['m']}, {p['rate_pps']} packets/s")
    verdict.check("threshold exceedance proportion", 100.0 * p["n_exceed"] / p["n_total"], runs=src,
                  note="zeta_u = k/n")
    verdict.check("10000-observation return level", rl.level, runs=src,
                  note="x_m = u + sigma/xi ((m zeta_u)^xi - 1), zeta_u = k/n (Coles eq. 4.13)")
    verdict.check("return level 95% CI lower (delta method)", rl.low, runs=src,
                  note=f"delta method over (zeta_u, sigma, xi): SEs backed out of the printed Wald intervals "
                       f"(SE sigma {printed.se_sigma:.3f}, SE xi {printed.se_xi:.4f}), their correlation "
                       f"(not printed) from the expected information; with the pure expected-information "
                       f"covariance the interval is [{rl_exp.low:.1f}, {rl_exp.high:.1f}] µs")
    verdict.check("return level 95% CI upper (delta method)", rl.high, runs=src,
                  note="as the lower end")
    verdict.check("return period of 10000 observations", m / p["rate_pps"] / 60.0, runs=src,
                  note=f"m / {p['rate_pps']} pkt/s, in minutes")
    verdict.check("sigma 95% CI lower", wald["sigma"][0], runs=src,
                  note="Wald interval from the expected information at the printed estimates; the paper's "
                       "interval comes from the observed information of its data, hence the tolerance")
    verdict.check("sigma 95% CI upper", wald["sigma"][1], runs=src, note="as above")
    verdict.check("xi 95% CI lower", wald["xi"][0], runs=src, note="as above")
    verdict.check("xi 95% CI upper", wald["xi"][1], runs=src, note="as above")
    no_data = ("needs the 1264 observations (github.com/leonardscheerer/rare-latency-events), which are "
               "not in benchbook's datasets")
    verdict.not_derivable("GPD scale sigma (MLE)", "the MLE " + no_data + "; the printed value is the input above")
    verdict.not_derivable("GPD shape xi (MLE)", "the MLE " + no_data + "; the printed value is the input above")
    verdict.add("return level 95% CI (profile likelihood)", None, None, "us", src, "not derivable",
                "the paper prints no profile-likelihood interval, and computing one " + no_data +
                "; benchbook.analysis.evt.return_level_profile_ci does it given the data")
    verdict.add("upper end point of the fitted tail (xi < 0)", None, round(printed.upper_endpoint, 1), "us",
                src, "info", "u - sigma/xi: the fitted GPD puts no mass above it (not printed in the paper)")
    return {"return_level": rl, "return_level_expected_info": rl_exp, "wald": wald,
            "upper_endpoint": printed.upper_endpoint}
