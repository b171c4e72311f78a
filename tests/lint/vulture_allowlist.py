"""Names the dead-code check (tests/lint/dead_code.py) cannot see used, each with the reason it is used.

Reviewed: an entry belongs here only when something outside the static scan uses the name (a framework calls
it by name, a registry names it in a "module:attr" string, a serialiser reads every field, a layout names
every slot). Dead code is deleted, not listed.
"""
# ruff: noqa: B018, F821
# vulture reads this file as code that uses these names; ``_`` stands for any object.

# --- frameworks that call methods or read attributes by name
_.preprocess_cell  # nbconvert calls Preprocessor.preprocess_cell (publish/notebook_html)
_.server_version  # http.server sends it in the Server header (publish/serve.SiteHandler)
_.translate_path  # http.server maps a request path to a file through it (publish/serve)
_.list_directory  # http.server calls it for a directory without index.html (publish/serve refuses)
_.do_POST  # http.server dispatches each method to do_<METHOD> (publish/serve answers 405)
_.do_PUT  # as do_POST
_.do_DELETE  # as do_POST
_.do_PATCH  # as do_POST
_.do_OPTIONS  # as do_POST
_.allow_stdin  # an nbclient NotebookClient trait (experiment/jupyter_session)
_.shutdown_wait_time  # an nbclient NotebookClient trait (experiment/jupyter_session)
_.execute_managed_notebook  # papermill's engine API calls it (experiment/jupyter_session's engine)
_.kernel_snapshot  # called by name inside the Jupyter kernel (experiment/jupyter_session._call)
_.kernel_begin_point  # as kernel_snapshot
_.kernel_end_point  # as kernel_snapshot
_.datePublished  # an RO-Crate property, written into ro-crate-metadata.json (experiment/rocrate_export)
_.__wrapped__  # inspect.signature and functools follow it to the kernel's Python source (kernels.py)
_.resource_filename  # the pkg_resources stand-in's function schema_salad calls (provenance/cwl_crate)
_.release_gil  # numba's pycc reads it from each exported function's options (commands/kernels)
_.target_cpu  # numba pycc's CC attribute: compile for this CPU (commands/kernels)
_.verbose  # numba pycc's CC attribute (commands/kernels)
_._compile_mixins  # numba pycc calls it on its CC: our subclass links the mixins compiled once (commands/kernels)
_.prec  # decimal's context precision, set on localcontext() (analysis/hist_report, analysis/moongen_stats)
typingctx  # numba's @intrinsic passes the typing context as the first argument (analysis/match_intrinsics)

# --- looked up by name at run time
_.from_spec  # the engines' factories, registered as "module:Class.from_spec" (engine/options.ENGINES)
plan_testpmd  # a DuT kind's planner, registered as "module:attribute" (testbed/dut.DUT_KINDS)
plan_ip_forward  # as plan_testpmd
plan_testpmd_lxc  # as plan_testpmd (testbed/lxc_dut)
_.load8  # match_kernel loads it by name: numba_global("benchbook.analysis.match_intrinsics", "load8")
_.prefetch  # as load8: numba_global("benchbook.analysis.match_intrinsics", "prefetch")
_._put  # Executor runs a step through getattr(self, f"_{step.kind}") (testbed/plan)
_._fetch  # as _put

# --- every field is written out: to_dict / asdict / __dict__ of a parsed or recorded result
_.normalizing_index_offset  # a header field of the HdrHistogram encoding, decoded for readers (hdr_codec)
_.word_size  # as normalizing_index_offset
_.max_snd_cwnd_bytes  # a field of iperf3's parsed end-of-test stream totals (tools/iperf3)
_.mean_rtt_us  # as max_snd_cwnd_bytes
_.cca_receiver  # a field of the parsed iperf3 report (tools/iperf3)
_.start_unix_s  # as cca_receiver
_.overlimits  # a field of a parsed tc qdisc's statistics, in its as_dict (tools/tc)
_.requeues  # as overlimits
_.backlog_bytes  # as overlimits
_.snd_una  # a field of a tcp_probe sample, a column of samples_frame (tools/tcp_probe)
_.data_len  # as snd_una
_.boot_seconds  # a field of a guest boot's result, in its as_dict (testbed/kvm_guest)
_.wanted_for  # a column of the Guix index TSV (provenance/guix_index)
_.unmatched_post  # a field of the synthetic pair's truth, read by name in Truth.counts (capture/synth)
_.duplicated  # the generator's per-packet truth beside id, t_pre_ns and latency_ns, for callers (capture/synth)
_.estimator  # what statistic a loaded run carries, per input kind (analysis/run_sets.Run)
_.ci90_value  # a field of a measured verdict row, written into verdict.json by asdict (reproduce/verdict_rows)
_.unit_a  # a field of a judged claim, written into verdict.json by asdict; the site heads a's per-run values
# with it (reproduce/verdict_rows, publish/measured_view)

# --- slots of a layout unpacked from range(): each slot is named so the indices stay right
FL_HS  # analysis/tcp_flows: the flow array's handshake slot
S_SEG_COUNT  # analysis/tcp_flows: a direction slot
PSH  # analysis/tcp_parse: a TCP flag bit (FIN, SYN, RST, PSH, ACK, URG, ECE, CWR)
URG  # as PSH
ECE  # as PSH
CWR  # as PSH
RULE_TCPTRACE  # analysis/tcp_rules: the index of "tcptrace" in RULES
EV_FINACK  # capture/tcp_synth: an event kind
F_PEND_RX_AT  # capture/tcp_synth: a per-flow state column
F_OOO_PENDING  # as F_PEND_RX_AT
