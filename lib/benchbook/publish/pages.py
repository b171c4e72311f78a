"""The HTML the site adds around executed notebooks: the index, and per run its header, summary
(badge, claim, verdict table), provenance panel, downloads and history. Every link is relative."""

from __future__ import annotations

import functools
import json
import shlex
from pathlib import Path
from typing import Any

import jinja2

from benchbook.provenance.environment import guix_rebuild_argv
from benchbook.publish import measured_view
from benchbook.publish.runs import PublishedRun
from benchbook.publish.verify import Checked
from benchbook.reproduce.notebook_params import INJECTED_PARAMETERS

# Parameters `benchbook reproduce` sets itself, which the rebuild command leaves out; and registry_dir, which it
# passed beside paper_dir (the same folder) in runs recorded before the two became one parameter.
AUTO_PARAMETERS = (*INJECTED_PARAMETERS, "registry_dir")
OUTCOME_CLASSES = ("reproduced", "figure redrawn", "partial", "inconclusive", "mismatch", "failed", "complete",
                   "interrupted")

_HEADER = """<header class="bb-header">
<nav><a href="{{ root }}index.html">benchbook: published runs</a> &rsaquo; {{ run.figure.paper_id }}
&rsaquo; {{ run.experiment }}</nav>
<nav class="bb-jump"><a href="#notebook">notebook</a> <a href="#provenance">provenance</a>
<a href="#downloads">downloads</a> <a href="#history">history</a></nav>
</header>"""

_SUMMARY = """<section class="bb-summary" id="summary">
<h1>{{ run.figure.title or run.experiment }}</h1>
<p class="bb-ids"><code>{{ run.experiment }}</code> run <code>{{ run.run_id }}</code></p>
<p><span class="bb-badge bb-{{ run.outcome|replace(' ', '-') }}" data-outcome="{{ run.outcome }}">{{ run.badge }}</span>
 <span class="bb-meta">{{ run.figure.mode or "unregistered" }} &middot; {{ run.date }} &middot;
 {{ run.environment_text }}</span></p>
{% if run.figure.citation %}<p class="bb-citation">{{ run.figure.citation }}</p>{% endif %}
{% if claim.text %}<p class="bb-claim">Principal claim: {{ claim.text }}
 <span class="bb-badge bb-claim-{{ claim.status|replace(' ', '-') }}">{{ claim.status }}</span></p>{% endif %}
{% if run.record.error %}<p class="bb-error">The run {{ run.record.status }}: {{ run.record.error }}</p>{% endif %}
{% if measured %}{% include "measured" %}{% elif rows %}<table class="bb-verdict">
<thead><tr><th>#</th><th>published value</th><th>published</th><th>computed</th><th>run(s)</th><th>status</th>
<th>note</th></tr></thead><tbody>
{% for r in rows %}<tr class="bb-row-{{ r.status|replace(' ', '-') }}"><td>{{ loop.index }}</td><td>{{ r.name }}</td>
<td>{{ r.published_text }}</td><td>{{ r.computed_text }}</td><td>{{ r.runs }}</td><td>{{ r.status }}</td>
<td>{{ r.note }}{% if r.tolerance %} (tolerance {{ r.tolerance }}){% endif %}</td></tr>
{% endfor %}</tbody></table>{% endif %}
{% for w in changed %}<p class="bb-warning">Input changed since this run: {{ w }}</p>{% endfor %}
</section>"""

# A measured verdict (verdict.json /2, kind "measured"): k of m beside m * alpha, each measured row and each claim
# as a drawing (publish.interval_svg) beside its numbers, every per-run value, and what redoes the verdict.
_MEASURED = """<p class="bb-multiplicity">{{ multiplicity.text if multiplicity else "no value judged across runs" }}</p>
<p class="bb-legend bb-meta">Each drawing: the shaded band is the margin ±δ around the published value (dashed
line), declared with its source before the runs; the thick bar is the {{ levels[0] }} interval and the thin bar
the {{ levels[1] }} interval of the median over runs (reproduced: the {{ levels[0] }} interval inside the band;
mismatch: the {{ levels[1] }} interval wholly outside); the black tick is the median; each circle is one run.
The numbers are in the table beside it.</p>
{% if mrows %}<div class="bb-table-scroll"><table class="bb-verdict bb-measured" id="measured-rows">
<thead><tr><th>#</th><th>published value</th><th>published ± margin</th><th>intervals against the margin</th>
<th>median and intervals</th><th>runs</th><th>status</th></tr></thead><tbody>
{% for r in mrows %}<tr class="bb-row-{{ r.status|replace(' ', '-') }}" id="row-{{ r.index }}" data-row="{{ r.index }}"
 data-status="{{ r.status }}"><td>{{ r.index }}</td>
<td>{{ r.name }}{% if r.statistic %}<br><code>{{ r.statistic }}</code>{% endif %}{% if r.definition %}<br>
<span class="bb-meta">{{ r.definition }}</span>{% endif %}</td>
<td>{{ r.published_text }}{% if r.margin_text %} {{ r.margin_text }}<br><span class="bb-meta">band {{ r.band_text }};
 from {{ r.sources }}{% if r.margin_note %}: {{ r.margin_note }}{% endif %}</span>{% endif %}</td>
<td class="bb-drawing">{{ r.svg|safe }}</td>
<td class="bb-numbers"><span>{{ r.estimate_text }}</span><br><span>{{ r.level90 }}: {{ r.ci90_text }}</span><br>
<span>{{ r.level95 }}: {{ r.ci95_text }}</span>{% if r.delta_text %}<br><span class="bb-meta">{{ r.delta_text }}</span>
{% endif %}{% if r.method %}<details class="bb-method"><summary>method</summary>{{ r.method }}</details>{% endif %}</td>
<td>{{ r.runs }}<br><span class="bb-meta">{{ r.n_text }}</span>
{% if r.per_run %}<details class="bb-per-run"><summary>per-run values</summary><table class="bb-kv"><thead><tr>
<th>run</th><th>value</th><th>N</th></tr></thead><tbody>
{% for p in r.per_run %}<tr><td>{{ p.run }}</td><td>{{ p.value }}</td><td>{{ p.n }}</td></tr>{% endfor %}
</tbody></table></details>{% endif %}{% if r.without_value %}<span class="bb-meta">runs without a value:
 {{ r.without_value|join(', ') }}</span>{% endif %}</td>
<td><span class="bb-badge bb-{{ r.status|replace(' ', '-') }}">{{ r.status }}</span>{% if r.detail %}<br>
<span class="bb-detail">{{ r.detail }}</span>{% endif %}{% if r.note %}<br><span class="bb-meta">{{ r.note }}</span>
{% endif %}</td></tr>
{% endfor %}</tbody></table></div>{% endif %}
{% if claims %}<h2>Claims as tests</h2>
<p class="bb-legend bb-meta">Each drawing: the shaded region is where the claim holds (above 0 for a > b, the
margin for a ≈ b, [x, y] for a ratio, q and above for a share), the dashed line its threshold; the bars are the
{{ levels[0] }} and {{ levels[1] }} intervals of Δ (a > b and a share read the {{ levels[1] }} interval); circles:
each run's Δ where a and b come from the same runs, each run's share for a share.</p>
<div class="bb-table-scroll"><table class="bb-verdict bb-claims" id="claims"><thead><tr><th>#</th><th>claim</th>
<th>holds when</th><th>interval against the threshold</th><th>estimate and intervals</th><th>runs</th>
<th>verdict</th></tr></thead><tbody>
{% for c in claims %}<tr class="bb-row-{{ c.verdict|replace(' ', '-') }}" id="claim-{{ c.index }}"
 data-claim="{{ c.id }}" data-verdict="{{ c.verdict }}"><td>{{ c.index }}</td>
<td><b>{{ c.id }}</b>{% if c.principal %} (principal){% endif %}<br>{{ c.text }}<br><code>{{ c.relation }}</code>
{% for k, d in c.definitions %}<br><span class="bb-meta">{{ k }}: {{ d }}</span>{% endfor %}</td>
<td>{{ c.threshold }}</td>
<td class="bb-drawing">{{ c.svg|safe }}</td>
<td class="bb-numbers"><span>{{ c.estimate_text }}</span><br>{% if c.ci90_text != '-' %}<span>{{ c.level90 }}:
 {{ c.ci90_text }}</span><br>{% endif %}<span>{{ c.level95 }}: {{ c.ci95_text }}</span>{% if c.method %}
<details class="bb-method"><summary>method</summary>{{ c.method }}</details>{% endif %}</td>
<td>{{ c.runs_text }}{% if c.set_a %}<details class="bb-per-run"><summary>per-run values</summary>
<table class="bb-kv"><thead><tr><th>run</th><th>{{ c.names[0] }}</th></tr></thead><tbody>
{% for p in c.set_a %}<tr><td>{{ p.run }}</td><td>{{ p.value }}</td></tr>{% endfor %}</tbody></table>
<table class="bb-kv"><thead><tr><th>run</th><th>{{ c.names[1] }}</th></tr></thead><tbody>
{% for p in c.set_b %}<tr><td>{{ p.run }}</td><td>{{ p.value }}</td></tr>{% endfor %}</tbody></table>
</details>{% endif %}</td>
<td><span class="bb-badge bb-{{ c.verdict|replace(' ', '-') }}">{{ c.verdict }}</span>{% if c.detail %}<br>
<span class="bb-detail">{{ c.detail }}</span>{% endif %}</td></tr>
{% endfor %}</tbody></table></div>{% endif %}
{% if others %}<h2>Other rows</h2><table class="bb-verdict"><thead><tr><th>#</th><th>name</th><th>value</th>
<th>status</th><th>note</th></tr></thead><tbody>
{% for r in others %}<tr class="bb-row-{{ r.status|replace(' ', '-') }}"><td>{{ r.index }}</td><td>{{ r.name }}</td>
<td>{{ r.computed_text }}</td><td>{{ r.status }}</td><td>{{ r.note }}</td></tr>
{% endfor %}</tbody></table>{% endif %}
<details class="bb-redo" id="redo"{% if redo.has_plan %} open{% endif %}><summary>Redo this verdict</summary>
<p>Every number above is in <code>verdict.json</code> (downloads): each per-run value with its N, the margins and
their sources, the estimators and definitions, the intervals and the plan below.{% if redo.has_plan %} Rerunning
the plan (same arms, runs per arm and seed: the same order) and judging its runs repeats the verdict.{% endif %}</p>
<table class="bb-kv"><tbody>
<tr><th>α</th><td>{{ redo.alpha }} ({{ levels[0] }} intervals for equivalence, {{ levels[1] }} for a difference)
</td></tr>
{% if redo.has_plan %}<tr><th>runs per arm</th><td>{{ redo.repetitions }}</td></tr>
<tr><th>seed</th><td><code>{{ redo.seed }}</code></td></tr>
<tr><th>order</th><td>{{ redo.order_method }}<ol class="bb-rounds">{% for r, arms in redo.rounds %}<li>{{ arms }}</li>
{% endfor %}</ol></td></tr>
<tr><th>runs</th><td>{{ redo.counts }}</td></tr>
<tr><th>excluded</th><td>{% if redo.excluded %}{% for x in redo.excluded %}{{ x.arm }} run {{ x.repetition }}:
 {{ x.rule }} ({{ x.reason }}){% if not loop.last %}; {% endif %}{% endfor %}{% else %}none{% endif %}</td></tr>
<tr><th>validity rules</th><td>{% for r in redo.rules %}{{ r.name }}: {{ r.description }}{% if not loop.last %};
{% endif %}{% endfor %}</td></tr>
<tr><th>arms</th><td><details><summary>{{ redo.arms|join(', ') }}</summary><pre class="bb-json">{{ arms_json }}</pre>
</details></td></tr>{% else %}<tr><th>plan</th><td>no repetitions.json in the run directory</td></tr>{% endif %}
<tr><th>noise floor</th><td>{{ redo.noise_floor or "no calibration of this host for the entry" }}</td></tr>
</tbody></table></details>"""

_PANELS = """<section class="bb-provenance" id="provenance" data-pagefind-ignore>
<h2>Provenance</h2>
<h3>Rebuild this run</h3>
<pre class="bb-command">{{ commands.reproduce }}</pre>
<p>In the pinned environment of this run, with <code>channels.scm</code> and <code>manifest.scm</code> from the
downloads below, in a checkout of git commit <code>{{ env.git_commit or "unknown" }}</code>:</p>
<pre class="bb-command">{{ commands.guix }}</pre>
<h3>Environment</h3>
<table class="bb-kv"><tbody>
<tr><th>git commit</th><td><code>{{ env.git_commit }}</code>{% if env.git_dirty %} (work tree dirty{% if
 env.git_untracked_inputs %}; untracked inputs: {{ env.git_untracked_inputs|join(', ') }}{% endif %}){% endif %}
</td></tr>
<tr><th>pip lock</th><td>{{ env.lock_file }} SHA-256 <code>{{ env.lock_sha256 }}</code></td></tr>
<tr><th>Guix channel commit</th><td><code>{{ env.guix_channel_commit }}</code></td></tr>
<tr><th>Python</th><td>{{ env.python }}</td></tr>
<tr><th>benchbook</th><td>{{ env.benchbook_version }}</td></tr>
<tr><th>status</th><td>{{ run.record.status }}, {{ run.record.start }} &ndash; {{ run.record.end }}
 ({{ run.record.duration_s }} s)</td></tr>
</tbody></table>
<h3>Parameters</h3>
<table class="bb-kv"><tbody>
{% for k, v in params %}<tr><th>{{ k }}</th><td><code>{{ v }}</code></td></tr>
{% endfor %}</tbody></table>
<h3>Host fingerprint</h3>
<table class="bb-kv"><tbody>
{% for k, v in host %}<tr><th>{{ k }}</th><td>{{ v }}</td></tr>
{% endfor %}</tbody></table>
<details><summary>full fingerprint (JSON)</summary><pre class="bb-json">{{ host_json }}</pre></details>
<h3>Capabilities missing or substituted</h3>
{% if caps %}<table class="bb-kv"><tbody>
{% for c in caps %}<tr><th>{{ c.capability }}</th><td>{{ c.status }}{% if c.detail %}: {{ c.detail }}{% endif %}
</td></tr>
{% endfor %}</tbody></table>{% else %}<p>None: every capability the run needed was present.</p>{% endif %}
<h3>Inputs</h3>
<table class="bb-files"><thead><tr><th>path</th><th>role</th><th>bytes</th><th>SHA-256</th><th>when published</th>
</tr></thead><tbody>
{% for c in inputs %}<tr><td>{{ c.entry.path }}{% if c.entry.kind == 'directory' %} ({{ c.entry.files }} files){% endif
 %}</td><td>{{ c.entry.role }}</td><td>{{ c.entry.bytes }}</td><td><code>{{ c.entry.sha256 }}</code></td>
<td class="bb-check-{{ c.status|replace(' ', '-') }}">{{ c.status }}{% if c.detail %} ({{ c.detail }}){% endif %}
</td></tr>
{% endfor %}</tbody></table>
<h3>Outputs</h3>
<table class="bb-files"><thead><tr><th>path</th><th>bytes</th><th>SHA-256</th><th>when published</th></tr></thead>
<tbody>
{% for c in outputs %}<tr><td>{% if c.href %}<a href="{{ c.href }}">{{ c.entry.path }}</a>{% else %}{{ c.entry.path
 }}{% endif %}</td><td>{{ c.entry.bytes }}</td><td><code>{{ c.entry.sha256 }}</code></td>
<td class="bb-check-{{ c.status }}">{{ c.status }}</td></tr>
{% endfor %}</tbody></table>
</section>
<section class="bb-downloads" id="downloads" data-pagefind-ignore>
<h2>Downloads</h2>
<ul>
{% for d in downloads %}<li><a href="{{ d.href }}">{{ d.name }}</a> <span class="bb-meta">{{ d.what }}</span></li>
{% endfor %}</ul>
{% if raw_note %}<p class="bb-meta">{{ raw_note }}</p>{% endif %}
</section>
<section class="bb-history" id="history" data-pagefind-ignore>
<h2>History of {{ run.experiment }}</h2>
<table class="bb-files"><thead><tr><th>run</th><th>date</th><th>outcome</th><th>environment</th></tr></thead><tbody>
{% for h in history %}<tr{% if h.current %} class="bb-current"{% endif %}><td>{% if h.current %}{{ h.run_id }}
 (this run){% else %}<a href="{{ h.href }}">{{ h.run_id }}</a>{% endif %}</td><td>{{ h.date }}</td>
<td><span class="bb-badge bb-{{ h.outcome|replace(' ', '-') }}">{{ h.badge }}</span></td>
<td>{{ h.environment }}</td></tr>
{% endfor %}</tbody></table>
</section>"""

# the opening of the pages written here (the bare run page and the index), up to their titles
_PAGE_START = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="icon" href="data:,">
"""

_BARE_PAGE = _PAGE_START + """<title>{{ bb.title }}</title>
<link rel="stylesheet" href="{{ bb.assets }}/site.css">
</head>
<body class="bb-page">
{{ bb.header|safe }}
<main data-pagefind-body>
{{ bb.summary|safe }}
<section class="bb-notebook" id="notebook"><h2>Executed notebook</h2>
<p>This run left no executed notebook.</p></section>
{{ bb.panels|safe }}
</main>
</body>
</html>
"""

_INDEX = _PAGE_START + """<title>benchbook: published runs</title>
<link rel="stylesheet" href="assets/site.css">
</head>
<body class="bb-index">
<header class="bb-header"><nav><strong>benchbook: published runs</strong></nav>
<nav class="bb-meta">{{ n_figures }} figures and tables, {{ n_runs }} runs, published {{ published }}</nav></header>
<main data-pagefind-ignore>
<p class="bb-outcome-counts">Figures and tables by the outcome of their newest run:
{% for o, n in counts %}<span class="bb-badge bb-{{ o|replace(' ', '-') }}" data-outcome="{{ o }}"
 data-count="{{ n }}">{{ n }} {{ o }}</span> {% endfor %}</p>
<section class="bb-filters">
<label>paper <select id="filter-paper"><option value="">all papers</option>
{% for p in papers %}<option value="{{ p.id }}">{{ p.id }}</option>{% endfor %}</select></label>
<label>outcome <select id="filter-outcome"><option value="">all outcomes</option>
{% for o, n in counts %}<option value="{{ o }}">{{ o }} ({{ n }})</option>{% endfor %}</select></label>
<span id="filter-count" class="bb-meta"></span>
<div id="search" data-search="{{ 'yes' if search else 'no' }}"></div>
<p id="search-note" class="bb-meta" hidden>Search works when the site is served over http
(<code>benchbook serve SITE</code>), not from a file:// URL.</p>
</section>
{% for p in papers %}<section class="bb-paper" data-paper="{{ p.id }}">
<h2>{{ p.title }} <span class="bb-meta">({{ p.id }})</span></h2>
<div class="bb-cards">
{% for f in p.figures %}<article class="bb-card" data-paper="{{ p.id }}" data-outcome="{{ f.run.outcome }}">
<a class="bb-thumb" href="{{ f.href }}">{% if f.thumb %}<img src="{{ f.thumb }}" alt="figure of {{ f.run.experiment }}"
 loading="lazy">{% else %}<span class="bb-nothumb">no static image</span>{% endif %}</a>
<div class="bb-card-text">
<h3><a href="{{ f.href }}">{{ f.run.figure.title or f.run.experiment }}</a></h3>
<p><code>{{ f.run.experiment }}</code></p>
<p><span class="bb-badge bb-{{ f.run.outcome|replace(' ', '-') }}">{{ f.run.badge }}</span></p>
<p class="bb-citation">{{ f.run.figure.citation }}</p>
<p class="bb-meta">{{ f.run.figure.mode or "unregistered" }} &middot; {{ f.run.date }} &middot;
 {{ f.run.environment_text }}</p>
{% if f.n_earlier %}<p class="bb-meta"><a href="{{ f.href }}#history">{{ f.n_earlier }} earlier
 run{{ 's' if f.n_earlier > 1 }}</a>: {{ f.earlier_outcomes }}</p>{% endif %}
</div></article>
{% endfor %}</div></section>
{% endfor %}
</main>
<script src="assets/site.js"></script>
</body>
</html>
"""


@functools.lru_cache(maxsize=1)
def _env():
    env = jinja2.Environment(loader=jinja2.DictLoader({"header": _HEADER, "summary": _SUMMARY, "panels": _PANELS,
                                                       "measured": _MEASURED, "index": _INDEX,
                                                       "bare_page": _BARE_PAGE}),
                             autoescape=True, keep_trailing_newline=True)
    return env


def render(name: str, **context: Any) -> str:
    return _env().get_template(name).render(**context)


def _fmt(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        text = f"{value:,.4f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.6g}"
    else:
        text = str(value)
    return f"{text} {'µs' if unit == 'us' else unit}".strip()


def measured_context(run: PublishedRun) -> dict[str, Any]:
    """What the summary template needs of a measured verdict (empty for any other)."""
    verdict = run.verdict or {}
    if verdict.get("kind") != "measured":
        return {"measured": False}
    redo = measured_view.redo_facts(verdict)
    return {"measured": True, "mrows": measured_view.measured_rows(verdict),
            "claims": measured_view.claim_views(verdict), "others": measured_view.other_rows(verdict),
            "multiplicity": verdict.get("multiplicity"), "redo": redo,
            "levels": measured_view.level_texts(float(verdict.get("alpha") or 0.05)),
            "arms_json": json.dumps(redo["arms"], indent=1, default=str)}


def summary_html(run: PublishedRun, changed: list[str] = ()) -> str:
    """The summary fragment of a run page: badge, claim, and the verdict table (measured: rows and claims drawn
    against their margins and thresholds, and what redoes the verdict)."""
    claim = (run.verdict or {}).get("claim") or {}
    return render("summary", run=run, rows=verdict_rows(run), claim=claim, changed=list(changed),
                  **measured_context(run))


def verdict_rows(run: PublishedRun) -> list[dict[str, Any]]:
    rows = []
    for r in (run.verdict or {}).get("rows", []):
        rows.append({**r, "published_text": _fmt(r.get("published"), r.get("unit", "")),
                     "computed_text": _fmt(r.get("computed"), r.get("unit", ""))})
    return rows


def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def rebuild_commands(run: PublishedRun) -> dict[str, str]:
    """The `benchbook reproduce` (or `benchbook run`) command that reruns this run, and the
    `guix time-machine` command that runs it in the run's pinned environment."""
    params = run.record["parameters"]
    if run.figure.mode:
        inner = ["benchbook", "reproduce", run.experiment]
        for k, v in params.items():
            if k not in AUTO_PARAMETERS and run.figure.parameters.get(k, object()) != v:
                inner += ["-p", f"{k}={_param_text(v)}"]
    else:
        inner = ["benchbook", "run", Path(run.record["notebook"]).name]
        for k, v in params.items():
            if k != "output_dir":
                inner += ["-p", f"{k}={_param_text(v)}"]
        inner += ["--experiment", run.experiment]
    guix = guix_rebuild_argv("channels.scm", "manifest.scm", inner[1:])
    return {"reproduce": shlex.join(inner), "guix": shlex.join(guix)}


def host_summary(host: dict[str, Any]) -> list[tuple[str, str]]:
    k, c, cg = host.get("kernel") or {}, host.get("cpu") or {}, host.get("cgroups") or {}
    rows = [
        ("host", f"{host.get('hostname')} (euid {host.get('euid')}), taken {host.get('taken')}"),
        ("kernel", f"{k.get('release')}; cmdline {k.get('cmdline')}"),
        ("cpu", f"{c.get('model')} x{c.get('count')}; isolated {c.get('isolated') or '-'}; SMT {c.get('smt')}; "
                f"governor {c.get('frequency_governor')}"),
        ("memory", f"{(host.get('memory') or {}).get('MemTotal')} kB"),
        ("cgroups", f"{cg.get('mode')}"),
    ]
    for name, t in (host.get("tools") or {}).items():
        if isinstance(t, dict):
            rows.append((f"tool {name}", str(t.get("version") or t.get("debian_package") or t.get("reason") or "-")))
    return rows


def run_fragments(run: PublishedRun, root: str, inputs: list[Checked], outputs: list[dict[str, Any]],
                  downloads: list[dict[str, str]], history: list[dict[str, Any]], raw_note: str) -> dict[str, str]:
    """header, summary and panels of one run page (HTML fragments)."""
    rec = run.record
    caps = [c for c in rec.get("capabilities", []) if c.get("status") in ("missing", "substituted", "unknown")]
    changed = [f"{c.entry['path']} ({c.detail})" for c in inputs if c.status == "changed"]
    params = [(k, _param_text(v)) for k, v in rec["parameters"].items()]
    return {
        "header": render("header", run=run, root=root),
        "summary": summary_html(run, changed),
        "panels": render("panels", run=run, env=rec.get("environment", {}), commands=rebuild_commands(run),
                         params=params, host=host_summary(rec.get("host", {})),
                         host_json=json.dumps(rec.get("host", {}), indent=1, default=str), caps=caps, inputs=inputs,
                         outputs=outputs, downloads=downloads, history=history, raw_note=raw_note),
    }
