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
{% if rows %}<table class="bb-verdict">
<thead><tr><th>#</th><th>published value</th><th>published</th><th>computed</th><th>run(s)</th><th>status</th>
<th>note</th></tr></thead><tbody>
{% for r in rows %}<tr class="bb-row-{{ r.status|replace(' ', '-') }}"><td>{{ loop.index }}</td><td>{{ r.name }}</td>
<td>{{ r.published_text }}</td><td>{{ r.computed_text }}</td><td>{{ r.runs }}</td><td>{{ r.status }}</td>
<td>{{ r.note }}{% if r.tolerance %} (tolerance {{ r.tolerance }}){% endif %}</td></tr>
{% endfor %}</tbody></table>{% endif %}
{% for w in changed %}<p class="bb-warning">Input changed since this run: {{ w }}</p>{% endfor %}
</section>"""

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

_BARE_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="icon" href="data:,">
<title>{{ bb.title }}</title>
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

_INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="icon" href="data:,">
<title>benchbook: published runs</title>
<link rel="stylesheet" href="assets/site.css">
</head>
<body class="bb-index">
<header class="bb-header"><nav><strong>benchbook: published runs</strong></nav>
<nav class="bb-meta">{{ n_figures }} figures and tables, {{ n_runs }} runs, published {{ published }}</nav></header>
<main data-pagefind-ignore>
<section class="bb-filters">
<label>paper <select id="filter-paper"><option value="">all papers</option>
{% for p in papers %}<option value="{{ p.id }}">{{ p.id }}</option>{% endfor %}</select></label>
<label>outcome <select id="filter-outcome"><option value="">all outcomes</option>
{% for o in outcomes %}<option value="{{ o }}">{{ o }}</option>{% endfor %}</select></label>
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
                                                       "index": _INDEX,
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
    claim = (run.verdict or {}).get("claim") or {}
    params = [(k, _param_text(v)) for k, v in rec["parameters"].items()]
    return {
        "header": render("header", run=run, root=root),
        "summary": render("summary", run=run, rows=verdict_rows(run), claim=claim, changed=changed),
        "panels": render("panels", run=run, env=rec.get("environment", {}), commands=rebuild_commands(run),
                         params=params, host=host_summary(rec.get("host", {})),
                         host_json=json.dumps(rec.get("host", {}), indent=1, default=str), caps=caps, inputs=inputs,
                         outputs=outputs, downloads=downloads, history=history, raw_note=raw_note),
    }
