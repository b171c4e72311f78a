"""Plant each known bug in a copy of the tree and run the tests that must catch it.

Every mutation is one exact text replacement in one library file, found by its text (so it still applies
when the file moves; a mutation lists the text of each form the code has had). For each, the tree (without
.venv and .git) is copied to a temporary folder, the bug is planted there, and pytest runs the named tests
against the copy with a short per-test timeout: a mutation is caught when at least one test fails, the
timeout ends the run (a hang) or the interpreter dies (a crash: a kernel writing past an array). The same tests
must pass on the unplanted tree first (once per distinct list of tests). The planted run stops at its first
failure (``-x``). Mutations run ``--jobs`` at a time (default: the online CPUs), each in its own copy; one whose
tests change or measure host state (``alone``) runs after the others, by itself.

    .venv/bin/python tests/mutations/plant.py            # every mutation (make mutate)
    .venv/bin/python tests/mutations/plant.py --list
    .venv/bin/python tests/mutations/plant.py zero-latency-accepted

Exit status 0 when every mutation is caught, 1 when one survives or no longer applies.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "lib" / "benchbook"


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    edits: tuple[tuple[str, str], ...]  # (text, planted text): the first text found in lib/ is planted
    tests: tuple[str, ...]
    hint: str = ""  # a file name to prefer when the text occurs in several files
    alone: bool = False  # its tests change or measure host state (root): run with no other mutation beside it


MUTATIONS = (
    Mutation(
        "percentile-guard-removed",
        "discrete percentile rank computed in binary floating point (ceil(p/100*N) without exact decimals): "
        "rank 1000 instead of 999 at N = 1000, p = 99.9",
        (("r = math.ceil(p * total / 100)", "r = math.ceil(float(p) / 100 * total)"),),
        ("tests/analysis/test_percentiles.py",),
        hint="percentiles.py",
    ),
    Mutation(
        "relative-overrides-absolute",
        "with both tolerances set, the relative one replaces the absolute one instead of the larger winning",
        (("dev = max(dev, _dec(self.tolerance_rel) * abs(_dec(self.value)))",
          "dev = _dec(self.tolerance_rel) * abs(_dec(self.value))"),
         ("dev = max(dev, float(self.tolerance_rel) * abs(self.value))",
          "dev = float(self.tolerance_rel) * abs(self.value)")),
        ("tests/reproduce/test_tolerance.py",),
    ),
    Mutation(
        "tolerance-abs-removed",
        "the tolerance band made one-sided: computed - published <= allowed, without abs()",
        (("return abs(shown - _dec(self.value)) <= self._allowed_deviation()",
          "return (shown - _dec(self.value)) <= self._allowed_deviation()"),
         ("return abs(float(computed) - self.value) <= dev", "return (float(computed) - self.value) <= dev")),
        ("tests/reproduce/test_tolerance.py",),
    ),
    Mutation(
        "zero-latency-accepted",
        "the match kernel keeps a latency of 0 (lat < 0 rejected instead of lat <= 0)",
        (("if lat <= 0 or lat >= max_latency:", "if lat < 0 or lat >= max_latency:"),),
        ("tests/analysis/test_latency.py",),
    ),
    Mutation(
        "window-eviction-off-by-one",
        "the full-window eviction runs one entry late (tail - head > window): the ring overwrites the oldest "
        "waiting packet before it leaves the table, so its slot is freed for the wrong packet",
        (("if tail - head >= window:", "if tail - head > window:"),),
        ("tests/analysis/test_latency.py",),
    ),
    Mutation(
        "order-statistic-coverage-off-by-one",
        "the coverage of [X(j), X(k)] summed from K = j - 1 (P(j-1 <= K <= k-1)): every interval one rank too "
        "narrow, r = 5 gets a 'median interval' at 95 %",
        (("cov = cdf[k] - cdf[j]  # P(j <= K <= k - 1)", "cov = cdf[k] - cdf[j - 1]  # P(j <= K <= k - 1)"),),
        ("tests/analysis/test_intervals.py",),
        hint="intervals.py",
    ),
    Mutation(
        "tost-on-shortest-ranks",
        "TOST against a printed value reads the shortest order-statistic interval (one tail can exceed alpha/2)",
        (('quantile_interval(x, 0.5, level, value_range, tails="equal")',
          'quantile_interval(x, 0.5, level, value_range, tails="shortest")'),),
        ("tests/analysis/test_intervals.py::test_reference_comparison_reads_equal_tailed_intervals",),
        hint="equivalence.py",
    ),
    Mutation(
        "tost-on-the-95-interval",
        "equivalence decided by the 95 % interval instead of the 90 % one (TOST at 2.5 % per side)",
        (("    if low < ci90[0] and ci90[1] < high:", "    if low < ci95[0] and ci95[1] < high:"),),
        ("tests/analysis/test_equivalence.py",),
    ),
    Mutation(
        "different-on-the-90-interval",
        "'different' decided by the 90 % interval instead of the 95 % one",
        (("    if ci95[0] > high or ci95[1] < low:", "    if ci90[0] > high or ci90[1] < low:"),),
        ("tests/analysis/test_equivalence.py",),
    ),
    Mutation(
        "resolvability-bound-inverted",
        "a percentile counted resolvable when N is at most (not at least) ln(alpha/2)/ln(p)",
        (("return self.needed is not None and self.samples >= self.needed",
          "return self.needed is not None and self.samples <= self.needed"),),
        ("tests/analysis/test_resolvability.py",),
    ),
    Mutation(
        "bootstrap-run-minimum-dropped",
        "the bootstrap over runs computed from 2 runs per arm (3 runs look decisive)",
        (("    if min(x.size, y.size) < min_runs:", "    if min(x.size, y.size) < 2:"),),
        ("tests/analysis/test_bootstrap.py::test_refused_below_the_minimum_runs",
         "tests/analysis/test_equivalence.py::test_three_runs_inconclusive_with_runs_needed"),
    ),
    Mutation(
        "t-interval-without-normality-check",
        "a t-interval whatever Shapiro-Wilk says",
        (("    if not check.ok:", "    if False:"),),
        ("tests/analysis/test_intervals.py",),
        hint="intervals.py",
    ),
    Mutation(
        "t-interval-outside-the-range",
        "a t-interval kept when it leaves the statistic's range (a negative rate bound)",
        (("    if not value_range.holds(lo, hi):", "    if False:"),),
        ("tests/analysis/test_intervals.py",),
        hint="intervals.py",
    ),
    Mutation(
        "sequential-alpha-not-split",
        "--until-decisive judges every look at alpha instead of alpha / K (K looks planned): repeating until an "
        "interval looks decisive inflates the chance of a wrong verdict",
        (("        return self.alpha / self.looks", "        return self.alpha"),),
        ("tests/reproduce/test_until_decisive.py::test_bonferroni_over_looks_keeps_the_family_wise_error_at_alpha",),
        hint="sequential.py",
    ),
    Mutation(
        "sequential-look-below-minimum",
        "--until-decisive plans a first look below the minimum runs per arm: it cannot decide and spends a share "
        "of alpha",
        (("    first = max(int(first_runs), MIN_RUNS)\n    if max_runs < first:",
          "    first = int(first_runs)\n    if max_runs < first:"),),
        ("tests/reproduce/test_until_decisive.py::test_durations_and_the_look_plan",),
        hint="sequential.py",
    ),
    Mutation(
        "sequential-first-look-without-interval",
        "--until-decisive keeps a first look of 6 runs per arm with K > 1 looks planned: no interval of a median "
        "exists at 1 - alpha/K there, so the look decides no row and spends its alpha/K for nothing",
        (("        if fewest <= first:\n", "        if True:\n"),),
        ("tests/reproduce/test_until_decisive.py::test_durations_and_the_look_plan",),
        hint="sequential.py",
    ),
    Mutation(
        "extension-redoes-finished-runs",
        "more repetitions on a run directory rerun the finished runs instead of extending the plan",
        (("        todo = [i for i, rec in enumerate(runner.records) if rec is None or rec[\"status\"] not in "
          "FINISHED]",
          "        todo = list(range(len(runner.order))) if extended else [i for i, rec in enumerate(runner.records) "
          "if rec is None or rec[\"status\"] not in FINISHED]"),),
        ("tests/experiment/test_repetitions.py::test_more_repetitions_extend_the_plan_in_the_seeded_order_without_"
         "rerunning",),
        hint="repetitions.py",
    ),
    Mutation(
        "hist-prints-unresolvable-percentiles",
        "benchbook hist prints every ladder row, also percentiles the sample count cannot resolve",
        (("if not all_percentiles and 0.0 < level < 100.0 and not resolvable(level, total):",
          "if False and not resolvable(level, total):"),),
        ("tests/commands/test_hist.py::test_default_ladder_leaves_out_what_the_count_cannot_resolve",),
    ),
    Mutation(
        "summaries-print-unresolvable-percentiles",
        "latency/hist/merged summaries keep a number for a percentile the packet count cannot resolve",
        (("        if v is None or r.ok:", "        if True:"),),
        ("tests/commands/test_latency.py::test_exact_percentiles_beyond_the_in_memory_limit",),
        hint="resolvability.py",
    ),
    Mutation(
        "deletion-without-tombstone",
        "a packet leaving the match table always empties its slot (never a tombstone): keys further along its "
        "probe run become unreachable and their post copies go unmatched",
        (("    if tab[2 * ((s + 1) & tmask)] == EMPTY:\n        tab[2 * s] = EMPTY",
          "    if True:\n        tab[2 * s] = EMPTY"),),
        ("tests/analysis/test_latency.py",),
    ),
    Mutation(
        "kernel-cache-ignores-dependencies",
        "numba's disk cache keyed on the kernel's own file only: a kernel keeps running the code it inlined from "
        "another module before that module changed",
        (('    if options.get("cache") and getattr(d, "_cache", None) is not None:', "    if False:"),),
        ("tests/test_kernel_cache.py",),
    ),
    Mutation(
        "content-key-ipv6-checksum-kept",
        "the content key zeroes the UDP/TCP checksum over IPv4 only: an IPv6 capture with offloaded checksums "
        "matches 0 of 50",
        (("        elif etype == 0x86DD and L >= l3 + 40:", "        elif False:"),),
        ("tests/analysis/test_content_key.py",),
    ),
    Mutation(
        "hdr-accepts-one-past-range",
        "the recording kernel's range check one slot late: the first untrackable value is written past the "
        "counts array instead of refused",
        (("        if idx >= limit:\n            n_bad += 1", "        if idx > limit:\n            n_bad += 1"),),
        ("tests/analysis/test_hdr_properties.py",),
    ),
    Mutation(
        "pcapng-section-keeps-interfaces",
        "a new pcapng section keeps the previous section's interfaces: its packets take the first section's "
        "timestamp resolution (x1000 from microseconds)",
        (("                seen_shb = True\n                ifs = _Interfaces()\n",
          "                seen_shb = True\n"),),
        ("tests/capture/test_reader.py::test_second_pcapng_section_uses_its_own_interfaces_and_byte_order",),
    ),
    Mutation(
        "sweep-resume-keeps-killed-run",
        "sweep --resume counts a run left 'running' by a killed process as done instead of moving it aside "
        "and running the point again",
        (('        if status == "complete":\n            p["status"] = "complete"',
          '        if status in ("complete", "running"):\n            p["status"] = "complete"'),),
        ("tests/experiment/test_sweep_resume.py",),
    ),
    Mutation(
        "publish-ignores-changed-output",
        "publishing accepts a run whose output changed after it was recorded (the digest compared with itself)",
        (('        if digest != entry["sha256"]:', '        if digest != digest:'),),
        ("tests/publish/test_verify.py",),
    ),
    Mutation(
        "midflow-below-first-not-new",
        "a direction whose start was not captured keeps its coverage from its first segment only: payload below it "
        "counts as seen before (tcptrace: new and out of order)",
        (("if st[f, d, S_START_SEEN] == 0 and seg_start < low:", "if False and seg_start < low:"),),
        ("tests/analysis/test_tcp_corpus.py::test_midflow_excerpt_counts_bytes_below_the_first_segment_as_new",),
    ),
    Mutation(
        "syn-retransmission-not-counted",
        "a SYN repeating the direction's SYN sequence number is not a SYN retransmission (nor in tcptrace's total)",
        (("syn_rx = (flags & tp.SYN) != 0 and st[f, d, S_SYN_SEEN] != 0",
          "syn_rx = False and st[f, d, S_SYN_SEEN] != 0"),),
        ("tests/analysis/test_tcp_corpus.py::test_syn_and_synack_retransmissions_as_tshark_and_tcptrace_count_them",),
    ),
    Mutation(
        "fin-retransmission-outside-total",
        "retransmitted SYNs and FINs are counted in their columns but left out of the tcptrace rule's total",
        (("            if syn_rx or fin_rx:\n                bits |= tr.RX_TT\n", ""),),
        ("tests/analysis/test_tcp_corpus.py::test_fin_retransmissions_as_tshark_and_tcptrace_count_them",),
    ),
    Mutation(
        "teardown-skipped-after-failure",
        "a plan's teardown steps run only when every step succeeded: a failed measurement leaves its namespaces, "
        "cgroups and host settings behind",
        (("                if not s.teardown:\n                    continue",
          "                if not s.teardown or self.execution.error is not None:\n                    continue"),),
        ("tests/testbed/test_plan.py",),
        hint="plan.py",
    ),
    Mutation(
        "always-steps-skipped-after-failure",
        "after a failed step the collection steps are skipped too: the captures are never stopped, the raw data "
        "measured before the fault are not collected",
        (("            if s.teardown or (ex.error is not None and not s.always):",
          "            if s.teardown or ex.error is not None:"),),
        ("tests/testbed/test_plan.py",),
        hint="plan.py",
    ),
    Mutation(
        "runtime-value-not-substituted",
        "a step runs with its placeholder (DUT_PID) instead of the value the producing step set",
        (("        argv = [substitute(a, ex.values) for a in s.argv]", "        argv = list(s.argv)"),),
        ("tests/testbed/test_plan.py",),
        hint="plan.py",
    ),
    Mutation(
        "repetition-order-one-permutation",
        "the runner draws one permutation of the arms and repeats it every round: arms keep fixed slots instead "
        "of a fresh seeded block per round",
        (("    for rnd in range(1, repetitions + 1):\n        for i in rng.permutation(len(arms)):",
          "    perm = rng.permutation(len(arms))\n    for rnd in range(1, repetitions + 1):\n        for i in perm:"),),
        ("tests/experiment/test_repetitions.py::test_order_is_the_seeded_interleaving_and_each_run_has_its_own_record",),
    ),
    Mutation(
        "repetition-finished-run-redone",
        "resuming redoes complete runs as well (only not-runnable ones count as finished)",
        (('FINISHED = ("complete", "not runnable")', 'FINISHED = ("not runnable",)'),),
        ("tests/experiment/test_repetitions.py::test_ctrl_c_inside_a_run_resumes_without_running_a_finished_run_twice",),
    ),
    Mutation(
        "repetition-rule-ignored",
        "a run a validity rule flags still counts as valid",
        (('rec["valid"] = rec["status"] == "complete" and not rec["invalid_by"]',
          'rec["valid"] = rec["status"] == "complete"'),),
        ("tests/experiment/test_repetitions.py::test_invalid_runs_are_excluded_by_a_recorded_rule_never_silently",),
    ),
    Mutation(
        "repetition-plan-change-accepted",
        "a different plan in the same output directory is run on top of the old runs instead of refused",
        (("if old is not None and (diff := _differences(old, plan)):",
          "if False and old is not None and (diff := _differences(old, plan)):"),),
        ("tests/experiment/test_repetitions.py::test_a_changed_plan_is_refused_and_the_same_plan_runs_nothing",),
    ),
    Mutation(
        "perf-one-decimal-mark-per-file",
        "the decimal mark of a perf stat file's first report is used for every report (issue 22: French "
        "reports after a C one read 3,479464367 s as 3479464367 s)",
        (("                out.reports.append(_human_report(seg, source, number, decimal))",
          "                out.reports.append(_human_report(seg, source, number, decimal or (\n"
          "                    out.reports[0].decimal if out.reports else None)))"),),
        ("tests/tools/test_perf_reports.py::test_seven_reports_each_with_its_own_locale_and_footer",),
    ),
    Mutation(
        "perf-grouping-anywhere",
        "a mark that is not the decimal mark is dropped wherever it stands ('0,46' read as 46 with decimal '.')",
        (("        ok = (grouped and sep in _GROUPING and len(groups[-1]) == 3",
          "        ok = (grouped and sep in _GROUPING and len(groups[-1]) >= 1"),),
        ("tests/tools/test_perf_reports.py::test_grouping_only_between_digit_groups",),
    ),
    Mutation(
        "flent-old-versions-not-upgraded",
        "Flent files of data-format versions 1-3 are read without Flent's upgrade (raw values stay in "
        "transactions/s and seconds, version-1 raw values are missing)",
        (("        if version < FLENT_FORMAT_VERSION:\n            notes = _upgrade(doc, version)",
          "        if False:\n            notes = _upgrade(doc, version)"),),
        ("tests/analysis/test_flent_data.py::test_version_1_upgrade",
         "tests/analysis/test_flent_data.py::test_files_written_here_load_as_flent_loads_them"),
    ),
    Mutation(
        "fairness-left-out-unnamed",
        "a flow below the bulk share is dropped from the fairness index without being named",
        (("    s.left_out = left_out\n    return s", "    return s"),),
        ("tests/commands/test_fairness.py::test_intervals_parquet_bulk_flows_both_directions",),
    ),
    Mutation(
        "hist-empty-selection-malformed",
        "a log whose default selection picks no interval is reported as malformed (exit 1) instead of the "
        "empty distribution HistogramLogProcessor prints",
        (("                    out.notes.append(f\"{p}: no interval histogram selected of",
          "                    raise HistInputError(f\"{p}: no interval histogram selected of"),),
        ("tests/commands/test_hist_corpus.py::test_nothing_selected_prints_the_empty_distribution_and_says_why",),
    ),
    Mutation(
        "interactive-run-beside-notebook",
        "a notebook run by hand (no output_dir) writes into its working directory, its paper folder, instead of "
        "the interactive run's directory under data/runs",
        (("        output_dir = run.run_dir\n", "        output_dir = Path.cwd()\n"),),
        ("tests/reproduce/test_notebook_entry.py",),
        hint="notebook_entry.py",
    ),
    Mutation(
        "interactive-failed-cell-unrecorded",
        "an interactive run's record ignores a cell that raised: it stays running (or complete) without the error",
        (("        elif error is not None:\n            self.status = \"failed\"",
          "        elif False:\n            self.status = \"failed\""),),
        ("tests/reproduce/test_notebook_entry.py",),
        hint="interactive.py",
    ),
    Mutation(
        "judge-equivalence-claim-on-95",
        "an \"a ~ b\" claim holds only when the 95 % interval lies inside the margin (TOST reads the 90 %)",
        (("tost_verdict(effect.ci90, effect.ci95, margin.delta)",
          "tost_verdict(effect.ci95, effect.ci95, margin.delta)"),),
        ("tests/reproduce/test_judge.py::test_equivalence_claims_use_the_90_percent_interval",),
        hint="judge.py",
    ),
    Mutation(
        "judge-not-comparable-judged",
        "a value declared comparable = false (another definition or instrument) is judged against its margin anyway",
        (("    if not pv.comparable:\n        row.status, row.reason = NOT_COMPARABLE", "    if False:\n"
          "        row.status, row.reason = NOT_COMPARABLE"),),
        ("tests/reproduce/test_judge.py::test_row_statuses_from_runs_with_known_truth",),
        hint="judge.py",
    ),
    Mutation(
        "judge-no-interval-claim-holds",
        "a directional claim without an interval (fewer than 6 runs) counts as holding: not significant taken as "
        "shown",
        (('verdict = directional_verdict(effect.ci95, greater=claim.test == "a > b") if effect.ci95 else INCONCLUSIVE',
          'verdict = directional_verdict(effect.ci95, greater=claim.test == "a > b") if effect.ci95 else HOLDS'),),
        ("tests/reproduce/test_judge.py::test_claims_hold_fail_or_stay_inconclusive",),
        hint="judge.py",
    ),
    Mutation(
        "judge-share-on-point-estimate",
        "a share claim holds when the observed share reaches q, not the lower bound of its 95 % interval",
        (("    if ci.low >= claim.q:", "    if k / n >= claim.q:"),),
        ("tests/reproduce/test_judge.py::test_claims_hold_fail_or_stay_inconclusive",),
        hint="judge.py",
    ),
    Mutation(
        "judge-unpaired-direction-swapped",
        "two arms compared as ln(median b / median a): the core's Delta is B against A, so a > b reads backwards",
        (("boot = bootstrap_delta(b, a, scale,", "boot = bootstrap_delta(a, b, scale,"),),
        ("tests/reproduce/test_judge.py::test_claims_hold_fail_or_stay_inconclusive",),
        hint="judge.py",
    ),
    Mutation(
        "judge-noise-floor-inverted",
        "a margin above the testbed's noise floor is made inconclusive, one below it is judged",
        (("        if margin.delta < mde:\n", "        if margin.delta > mde:\n"),),
        ("tests/reproduce/test_judge.py::test_a_margin_below_the_noise_floor_is_inconclusive",),
        hint="judge.py",
    ),
    Mutation(
        "judge-resolvability-skipped",
        "a percentile the runs' N cannot resolve (or a maximum) is judged like any statistic",
        (('    limit = within_run_limit(pv.run_statistic or "", got.n)', "    limit = None"),),
        ("tests/reproduce/test_judge.py::test_row_statuses_from_runs_with_known_truth",),
        hint="judge.py",
    ),
    Mutation(
        "judge-claim-resolvability-skipped",
        "a claim on a maximum, or on a percentile its runs' N cannot resolve, is judged like any statistic",
        (("              if (why := within_run_limit(ref.statistic, got.n)) is not None]",
          "              if (why := within_run_limit(ref.statistic, got.n)) is None and False]"),),
        ("tests/reproduce/test_judge.py::test_statistics_no_run_resolves_are_never_judged_as_numbers",),
        hint="judge.py",
    ),
    Mutation(
        "judge-percentile-on-resolving-runs",
        "a percentile some runs cannot resolve (stored null) is judged on the runs that happen to resolve it",
        (("        if not ok.all() and _PERCENTILE.search(ref.statistic):",
          "        if False and _PERCENTILE.search(ref.statistic):"),),
        ("tests/reproduce/test_judge.py::test_statistics_no_run_resolves_are_never_judged_as_numbers",),
        hint="judge.py",
    ),
    Mutation(
        "cgroup-point-unresolvable-percentile-printed",
        "a point of the cgroup-latency sweep reports every percentile of the summary, also those its matched "
        "packets cannot resolve (p99.99 from 19,800 packets)",
        (("    shown, unresolved = resolved_percentiles({p: exact[float(p)] for p in REPORTED_PERCENTILES}, len(lat))",
          "    shown, unresolved = resolved_percentiles({p: exact[float(p)] for p in REPORTED_PERCENTILES}, 10**9)"),),
        ("tests/experiment/test_cgroup_latency.py::test_analyse_point_on_generated_pair_with_known_truth",),
        hint="cgroup_latency.py",
    ),
    Mutation(
        "verdict-failed-principal-claim-not-mismatch",
        "a principal claim that fails leaves the entry inconclusive instead of a mismatch",
        (("        if FAILS in verdicts:\n            return MISMATCH", "        if FAILS in verdicts:\n"
          "            return INCONCLUSIVE"),),
        ("tests/reproduce/test_verdict_measured.py::test_outcome_rules",),
        hint="verdict.py",
    ),
    Mutation(
        "registry-print-precision-relative-as-absolute",
        "a relative margin is held against the half unit of the last digit as if it were a fraction of the value",
        (("        margin, need = pv.margin_rel, pp / abs(pv.value)", "        margin, need = pv.margin_rel, pp"),),
        ("tests/reproduce/test_registry_measured.py::test_print_precision_is_half_a_unit_of_the_last_digit",),
        hint="registry.py",
    ),
    Mutation(
        "interval-tie-by-float-rounding",
        "among equally short, equally covering rank pairs the order-statistic interval picks by the last bits of "
        "the binomial sums: 39 runs at 30 % give [X(19), X(22)] where the documented rule gives [X(18), X(21)]",
        (("best = good[cov[good] >= cov[good].max() - _EPS][0]", "best = good[np.argmax(cov[good])]"),),
        ("tests/analysis/test_intervals_edges.py::test_shortest_ranks_are_the_documented_tie_break",),
    ),
    Mutation(
        "tost-margin-touching-is-inside",
        "equivalence declared when the 90 % interval reaches the margin (<= instead of <): an interval ending on "
        "+delta counts as inside it",
        (("    if low < ci90[0] and ci90[1] < high:", "    if low <= ci90[0] and ci90[1] <= high:"),),
        ("tests/analysis/test_equivalence_edges.py::test_tost_exactly_on_the_margin",),
    ),
    Mutation(
        "mean-excess-drops-the-minimum",
        "the mean residual life plot leaves out a threshold with exactly min_exceed exceedances (<= instead of <)",
        (("        if k < min_exceed:", "        if k <= min_exceed:"),),
        ("tests/analysis/test_evt_aids.py::test_mean_excess_keeps_exactly_min_exceed_and_goes_on_after_a_threshold_it_skips",),
        hint="evt.py",
    ),
    Mutation(
        "evt-profile-search-from-outside",
        "the profile-likelihood interval searches from a fitted level that is already outside it (no refusal): "
        "scipy's root search fails with 'f(a) and f(b) must have different signs' instead of a named error",
        (("    if not g(best) <= 0:", "    if False:"),),
        ("tests/analysis/test_evt_aids.py::test_profile_interval_refuses_a_fit_outside_the_shape_bounds_by_name",),
        hint="evt.py",
    ),
    Mutation(
        "evt-nll-log-not-log1p",
        "the GPD likelihood with log(1 + xi w) instead of log1p(xi w): for a fitted shape near 0 the 1/xi before it "
        "magnifies the lost digits, and the covariance from its second differences is 27-32 % off",
        (("(1.0 + 1.0 / xi) * float(np.log1p(t).sum())", "(1.0 + 1.0 / xi) * float(np.log(1.0 + t).sum())"),),
        ("tests/analysis/test_evt_search_edges.py::test_the_covariance_of_a_shape_near_zero_is_the_observed_information",),
        hint="evt.py",
    ),
    Mutation(
        "hdr-text-rounds-like-python",
        "the percentile text's numbers rounded as Python's % does (the binary value) instead of as Java's "
        "String.format does (the shortest decimal, half up): every ladder past 99.978 % differs from "
        "HistogramLogProcessor in the percentile column (0.999780273437 for 0.999780273438)",
        (('    d = Decimal(repr(x))\n', '    return f"{x:{width}.{decimals}f}"\n    d = Decimal(repr(x))\n'),),
        ("tests/analysis/test_hdr.py::test_java_fixed_is_javas_string_format",
         "tests/analysis/test_hdr.py::test_percentile_text_is_histogramlogprocessors"),
        hint="hdr.py",
    ),
    Mutation(
        "v1-move-counts-zombies-as-lost",
        "the v1 recipe's move counts a moved task that exited but is not yet reaped (a zombie keeps its /proc entry "
        "after leaving its cgroup) as neither verified nor exited: the isolation report's counts do not add up",
        (("case \\\"$s\\\" in ''|Z|X) x=$((x+1));; esac;; \"", "test -d /proc/$p || x=$((x+1));; \""),),
        ("tests/tools/test_cgroups_move.py::test_a_zombie_counts_as_exited_and_a_live_task_elsewhere_as_neither",),
        hint="cgroups.py",
    ),
    Mutation(
        "unjudged-claim-loses-its-range",
        "a claim the judge stops on early (a value <= 0, a statistic missing) keeps no claimed range: an "
        "'a / b within' row without one made relation() raise a KeyError in Verdict.claims_frame",
        (("    if claim.within is not None:\n        res.within = list(claim.within)\n",
          "    if False:\n        res.within = list(claim.within)\n"),),
        ("tests/reproduce/test_judge.py::test_claims_on_values_that_have_no_ratio",),
        hint="judge.py",
    ),
    Mutation(
        "p100-judged-as-a-percentile",
        "p0 and p100 are taken for resolvable percentiles: a row on p100_latency_ms gets order-statistic intervals "
        "of run maxima instead of 'not resolvable' (V11)",
        (("    if _EXTREME.search(statistic) or percent in (0.0, 100.0):",
          "    if _EXTREME.search(statistic):"),
         ("    if percent is None or percent > 100:", "    if percent is None or not 0 < percent < 100:")),
        ("tests/reproduce/test_judge_rules.py::test_a_row_on_p100_is_not_judged_as_a_number",),
        hint="judge.py",
    ),
    Mutation(
        "claim-across-units",
        "a claim compares a and b whatever their units: 1 Gbit/s against 500 Mbit/s is judged on ln(1 / 500)",
        (("    if a.unit != b.unit or \",\" in a.unit:", "    if False:"),),
        ("tests/reproduce/test_judge_rules.py::test_a_claim_on_statistics_in_different_units_is_refused",),
        hint="judge.py",
    ),
    Mutation(
        "share-runs-needed-by-bisection",
        "a share claim's runs needed is the last count that decides in the first block that has one, not the "
        "smallest: 5 of 7 against q = 0.8 asks for more than the 93 runs that decide",
        (("        for i in np.flatnonzero((low >= q - 1e-9) | (high < q + 1e-9)):",
          "        for i in np.flatnonzero((low >= q - 1e-9) | (high < q + 1e-9))[-1:]:"),),
        ("tests/reproduce/test_judge_rules.py::test_five_of_seven_against_0_8_needs_93_runs_not_100",),
        hint="judge.py",
    ),
    Mutation(
        "unjudged-claims-forgotten",
        "finalize() leaves the [[claims]] of a measured entry that judge_runs never judged out: a claims-only "
        "entry whose notebook skipped judge_runs ends 'figure redrawn' and ok",
        (("        if self.measured:\n            judged = {c.id for c in self.claims}",
          "        if False:\n            judged = {c.id for c in self.claims}"),),
        ("tests/reproduce/test_verdict_rules.py::test_a_claims_only_entry_without_judge_runs_is_partial_not_redrawn",),
        hint="verdict.py",
    ),
    Mutation(
        "mapped-capture-cut-sigbus",
        "the reader trusts the mapping's length: a plain capture cut short while it is read kills the process with "
        "SIGBUS when the scan touches the pages past the new end",
        (("        if self.mapped:\n            self.fill = max(", "        if False:\n            self.fill = max("),),
        ("tests/capture/test_source_rules.py::test_a_plain_file_cut_short_while_read_does_not_crash_the_process",),
        hint="reader.py",
    ),
    Mutation(
        "published-nan-accepted",
        "a published-data entry's value or tolerance of nan or inf (TOML has both) is loaded: a value of nan makes "
        "matches() raise, a tolerance of inf matches anything",
        (("        if key in item and not math.isfinite(item[key]):", "        if False:"),),
        ("tests/reproduce/test_registry_edges.py::test_a_published_number_must_be_finite",),
        hint="registry.py",
    ),
    Mutation(
        "printed-in-28-digits",
        "a computed value is printed in the decimal module's default 28 digits: 1e27 with 2 decimals (or 0.1 with "
        "40) cannot be quantized and never matches, not even the published value itself",
        (("                              context=Context(prec=max(digits, 28)))", "                              )"),),
        ("tests/reproduce/test_registry_edges.py::test_every_digit_is_kept_when_printing",),
        hint="registry.py",
    ),
    Mutation(
        "run-sniffing-reads-4096-bytes",
        "a run file's type is sniffed from its first 4096 bytes only: an iperf3 report after 4096 bytes of white "
        "space is taken for a MoonGen CSV and refused",
        (("        while chunk := fh.read(4096):", "        for chunk in [fh.read(4096)]:"),),
        ("tests/analysis/test_run_sets.py::test_a_report_after_4096_bytes_of_whitespace_is_an_iperf3_report",),
        hint="run_sets.py",
    ),
    Mutation(
        "tcp-summary-texts-crash",
        "a tcp summary.json's non-finite texts (\"NaN\", as benchbook writes them) are passed on as numbers: "
        "float('NaN') becomes a Jain's index, and a text goodput a TypeError instead of a RunInputError",
        (("    if value is None or value in (\"NaN\", \"Infinity\", \"-Infinity\"):\n        return None\n"
          "    if isinstance(value, bool) or not isinstance(value, (int, float)):",
          "    if value is None:\n        return None\n    if isinstance(value, str):\n        return float(value)\n"
          "    if isinstance(value, bool) or not isinstance(value, (int, float)):"),),
        ("tests/analysis/test_run_sets.py::test_benchbooks_own_non_finite_texts_in_a_summary_are_left_out",),
        hint="run_sets.py",
    ),
    Mutation(
        "perf-aggregation-change-not-a-boundary",
        "a -x report's shape ignores what its records aggregate over: a --per-socket report followed by a "
        "--per-thread one (no '# started on' between) is read as one report",
        (("shape = (time_s is not None, _aggregation_kind(aggr), cpus is not None, f[3].strip().endswith(\"%\"))",
          "shape = (time_s is not None, aggr is not None, False, f[3].strip().endswith(\"%\"))"),),
        ("tests/tools/test_perf_reports.py::test_concatenated_reports_read_as_each_alone",),
    ),
    Mutation(
        "schedule-late-step-delayed-not-skipped",
        "a link-schedule step whose successor is already due is still run, late, so lateness piles up over the "
        "schedule (needs root: the test runs the dumbbell in namespaces)",
        (("            if k + 1 < len(steps) and now >= steps[k + 1].t_s:",
          "            if k + 1 < len(steps) and False:"),),
        ("tests/testbed/test_link_schedule.py::"
         "test_steps_are_applied_one_process_each_and_skipped_rather_than_delayed",),
        alone=True,
        hint="dumbbell.py",
    ),
    Mutation(
        "hole-split-forgets-first",
        "a full hole list forgets its lowest hole before splitting one, as tcp_flows did until 2026-11-27: when the "
        "split hole is the lowest it is forgotten whole, and its split writes hole -1 (the last hole's end), so "
        "missed bytes come out negative",
        (("""            else:  # split (into the list's spare slot when full), then a full list forgets its lowest hole
                for k in range(n, j + 1, -1):""",
          """            else:  # split
                if n == MAX_HOLES:
                    n = _give_up_oldest_hole(holes, st, f, d, n, c)
                    j -= 1
                for k in range(n, j + 1, -1):"""),
         ("                if n > MAX_HOLES:  # the lowest may be the split one's lower part: it goes, its upper part "
          "stays\n                    n = _give_up_oldest_hole(holes, st, f, d, n, c)\n                    j -= 1\n",
          "")),
        ("tests/analysis/test_tcp_holes.py",),
        hint="tcp_flows.py",
    ),
    Mutation(
        "latency-at-max-matched",
        "a latency of exactly max_latency_ns is matched (lat > max_latency rejected instead of >=): reachable by a "
        "pre packet stamped back in time, which waits behind a later one instead of leaving the window",
        (("if lat <= 0 or lat >= max_latency:", "if lat <= 0 or lat > max_latency:"),),
        ("tests/analysis/test_latency.py::"
         "test_a_latency_of_exactly_max_latency_is_out_of_range_also_for_a_pre_packet_that_stepped_back",),
        hint="match_kernel.py",
    ),
    Mutation(
        "gpd-below-minus-one-covariance",
        "a GPD fit below xi = -1 (where the likelihood is unbounded) goes on to the information matrices, whose "
        "variance of sigma is negative there: standard errors end in a math domain error instead of NaN",
        (("    if xi < -1.0:\n        # the likelihood grows", "    if xi < -2.0:\n        # the likelihood grows"),),
        ("tests/analysis/test_evt_edges.py::test_a_fit_below_xi_minus_one_warns_and_gives_no_covariance",),
        hint="evt.py",
    ),
)


def find_target(m: Mutation) -> tuple[Path, str, str]:
    """(file, text, planted text) of the first of the mutation's edits that applies to exactly one place."""
    sources = {p: p.read_text() for p in LIB.rglob("*.py")}
    problems = []
    for old, new in m.edits:
        hits = [p for p, text in sources.items() if old in text]
        if len(hits) > 1 and m.hint:
            hits = [p for p in hits if p.name == m.hint]
        if len(hits) == 1 and sources[hits[0]].count(old) == 1:
            return hits[0], old, new
        where = ", ".join(f"{p.relative_to(REPO)} ({sources[p].count(old)} times)" for p in hits) or "no file"
        problems.append(f"{old!r} occurs in {where}")
    raise LookupError(f"{m.name}: no edit applies to exactly one place under lib/benchbook: " + "; ".join(problems))


def copy_tree(dest: Path) -> None:
    shutil.copytree(REPO, dest, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", "runs", "mutate", "mutate-site",
        "fuzz", "fuzz-site", "*.sock"))


def run_pytest(root: Path, tests: tuple[str, ...], timeout_s: int, first_failure: bool = False
               ) -> tuple[int, str, float]:
    env = dict(os.environ, PYTHONPATH=str(root / "lib"), PYTHONDONTWRITEBYTECODE="1")
    env.setdefault("BENCHBOOK_SHARED", str(REPO.parent / "shared"))
    # the property tests draw the examples make test draws (its HYPOTHESIS_SEED), on the baseline and planted alike
    cmd = [str(REPO / ".venv" / "bin" / "python"), "-m", "pytest", "-v", "-p", "no:cacheprovider",
           f"--timeout={timeout_s}", "-o", "timeout_method=thread", *(["-x"] if first_failure else []),
           f"--hypothesis-seed={os.environ.get('HYPOTHESIS_SEED', '20261126')}", *tests]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - t0


def verdict_of(rc: int, out: str) -> tuple[bool, list[str]]:
    """(caught, [what failed]) from a pytest run on the planted copy."""
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
    started = re.findall(r"^(tests/\S+::\S+)", out, re.M)
    if "Timeout" in out and "+++++" in out:
        failed.append(f"{started[-1] if started else '?'} (TIMEOUT: the run was ended by pytest-timeout)")
    crash = re.search(r"^Fatal Python error: (.+)$", out, re.M)
    if crash or rc < 0:  # the planted bug killed the interpreter (e.g. a kernel writing past an array)
        why = crash.group(1) if crash else f"killed by signal {-rc}"
        failed.append(f"{started[-1] if started else '?'} (CRASH: {why})")
    return rc != 0 and bool(failed), failed


class Baselines:
    """The unplanted tree's run of each distinct list of tests, made once (threads asking for the same list wait
    for the first)."""

    def __init__(self, timeout_s: int) -> None:
        self.timeout_s = timeout_s
        self.lock = threading.Lock()
        self.runs: dict[tuple[str, ...], concurrent.futures.Future[tuple[int, str, float]]] = {}

    def __call__(self, tests: tuple[str, ...]) -> tuple[int, str, float]:
        with self.lock:
            fut = self.runs.get(tests)
            mine = fut is None
            if mine:
                fut = self.runs[tests] = concurrent.futures.Future()
        assert fut is not None
        if mine:
            try:
                fut.set_result(run_pytest(REPO, tests, self.timeout_s))
            except BaseException as exc:
                fut.set_exception(exc)
        return fut.result()


def plant_one(m: Mutation, baseline: Baselines, timeout_s: int, keep: bool) -> tuple[bool, str]:
    """(caught, report lines) of one mutation: its baseline, its planted copy, the planted run."""
    try:
        target, old, new = find_target(m)
    except LookupError as exc:
        return False, f"NOT APPLIED  {exc}"
    rel = target.relative_to(REPO)
    rc, out, _ = baseline(m.tests)
    if rc != 0:
        return False, (f"BASELINE FAILS  {m.name}: {' '.join(m.tests)} fail on the unplanted tree; fix that first\n"
                       + out[-3000:])
    tmp = Path(tempfile.mkdtemp(prefix=f"bb-mutate-{m.name}-"))
    try:
        copy_tree(tmp / "tree")
        planted = tmp / "tree" / rel
        planted.write_text(planted.read_text().replace(old, new, 1))
        rc, out, secs = run_pytest(tmp / "tree", m.tests, timeout_s, first_failure=True)
        (tmp / "pytest.log").write_text(out)
        caught, failed = verdict_of(rc, out)
        lines = [f"{'CAUGHT  ' if caught else 'SURVIVED'} {m.name} in {rel} ({secs:.0f} s): {m.what}"]
        lines += [f"           failed: {f}" for f in failed]
        if not caught:
            lines.append(out[-2000:])
        if keep:
            lines.append(f"           kept: {tmp}")
        return caught, "\n".join(lines)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="mutations to plant (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--timeout", type=int, default=120, help="per-test timeout in seconds on the planted copy")
    ap.add_argument("--keep", action="store_true", help="keep the planted copies and their pytest output")
    ap.add_argument("--jobs", type=int, default=os.sysconf("SC_NPROCESSORS_ONLN"),
                    help="mutations planted and run at once (default: the online CPUs)")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        ap.error(f"unknown mutation(s): {', '.join(sorted(unknown))}")
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name}: {m.what}")
            for old, new in m.edits:
                print(f"    {old!r} -> {new!r}")
            print(f"    tests: {' '.join(m.tests)}")
        return 0
    baseline = Baselines(args.timeout)
    t0 = time.monotonic()
    caught = 0

    def report(result: tuple[bool, str]) -> None:
        nonlocal caught
        caught += result[0]
        print(result[1], flush=True)

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(plant_one, m, baseline, args.timeout, args.keep) for m in chosen if not m.alone]
        for fut in concurrent.futures.as_completed(futures):
            report(fut.result())
    for m in (m for m in chosen if m.alone):
        report(plant_one(m, baseline, args.timeout, args.keep))
    print(f"{caught} of {len(chosen)} planted bugs caught ({len(baseline.runs)} baseline runs, {args.jobs} at a "
          f"time, {time.monotonic() - t0:.0f} s)")
    return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
