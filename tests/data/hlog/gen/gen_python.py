"""The .hlog of the Python `hdrhistogram` package (hdrh 0.10.8): values.md's values through its
HistogramLogWriter; its own percentiles of the three untagged intervals to python-hdrh.json.

    .venv/bin/python tests/data/hlog/gen/gen_python.py tests/data/hlog
"""

import json
import sys
from pathlib import Path

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

START_S = 1700000000
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 100.0)


def value(k: int, j: int) -> int:
    return 1000 + ((k * 100000 + j) * 7919) % 1000003


out = Path(sys.argv[1])
total = HdrHistogram(1, 3_600_000_000_000, 3)
with open(out / "python-hdrh.hlog", "w") as fh:
    w = HistogramLogWriter(fh)
    w.output_comment("[Logged with the Python hdrhistogram package 0.10.8 (hdrh), tests/data/hlog/gen/gen_python.py]")
    w.output_log_format_version()
    # hdrh's output_start_time passes milliseconds to datetime.fromtimestamp and calls a method datetime lacks,
    # so a hdrh user writes no StartTime line: the reader takes the first interval's timestamp instead.
    w.output_legend()
    for k in range(3):
        h = HdrHistogram(1, 3_600_000_000_000, 3)
        for j in range(10000):
            h.record_value(value(k, j))
        if k == 2:
            h.record_value(5_000_000_000)
        h.set_start_time_stamp((START_S + k) * 1000)
        h.set_end_time_stamp((START_S + k + 1) * 1000)
        w.output_interval_histogram(h)
        total.add(h)
ref = {"implementation": "Python hdrhistogram 0.10.8", "count": total.get_total_count(),
       "min": total.get_min_value(), "max": total.get_max_value(),
       "percentiles": {str(p): total.get_value_at_percentile(p) for p in PERCENTILES}}
(out / "python-hdrh.json").write_text(json.dumps(ref, indent=1) + "\n")
