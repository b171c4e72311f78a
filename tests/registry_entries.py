"""Registry entry texts the registry tests share: a published-data entry (GOOD), the head of a measured entry
(HEAD), one measured value (VALUE), one claim (CLAIM), and the smallest published-data entry the loader accepts
(MINIMAL: one value printed with one decimal, nothing optional)."""

GOOD = '''id = "demo"
title = "t"
citation = "c"
notebook = "x.ipynb"
mode = "published-data"
[[published]]
name = "x"
value = 1.5
unit = "us"
tolerance_abs = 0.1
'''
HEAD = '''id = "m"
title = "t"
citation = "c"
notebook = "x.ipynb"
mode = "local-measurement"
'''
VALUE = '''[[published]]
name = "A throughput"
value = 85.05
unit = "Mbit/s"
decimals = 2
arm = "cubic-bbr"
run_statistic = "flow1_throughput_mbps"
margin_rel = 0.10
margin_source = ["emulation allowance"]
margin_note = "a local dumbbell stands in for the paper's testbed"
value_range = "rate"
'''
CLAIM = '''[[claims]]
id = "c1"
text = "Cubic takes more than BBR"
principal = true
test = "a > b"
a = "cubic-bbr:flow1_throughput_mbps"
b = "cubic-bbr:flow2_throughput_mbps"
'''

MINIMAL = '''id = "demo"
title = "t"
citation = "c"
notebook = "x.ipynb"
mode = "published-data"
[[published]]
name = "x"
value = 1.5
unit = "us"
decimals = 1
'''
