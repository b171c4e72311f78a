;; benchbook testbed environment (Guix manifest): the analysis stack plus the programs the local
;; and SSH testbeds drive (packet generation and capture, DPDK, LXC, perf, link emulation).
;;   guix time-machine -C channels.scm -- shell -m manifests/testbed.scm
;; Kept self-contained (a run directory stores one manifest); the Python entries must equal those
;; of manifests/analysis.scm (`benchbook env check` verifies it).
;; No "dpdk": Guix's dpdk.scm dates from 2024 and could not be shown to exist at the pinned commit
;; (manifests/guix-packages.toml, [[excluded]]); dpdk-testpmd comes from Debian's dpdk packages.
(specifications->manifest
  (list
    ;; analysis stack (same as manifests/analysis.scm)
    "python"
    "python-pip"
    "guile"
    "python-numpy"
    "python-numba"
    "python-pandas"
    "python-pyarrow"
    "python-scipy"
    "python-zstandard"
    "python-plotly"
    "python-nbclient@0.10.0"
    "python-papermill@2.6.0"
    "python-nbformat"
    "python-ipykernel"
    "jupyter"
    "python-rich"
    "python-tqdm"
    "python-jsonschema"
    "python-pytest"
    "python-pytest-timeout"
    ;; testbed programs
    "iproute"
    "ethtool"
    "tcpdump"
    "wireshark"
    "iperf"
    "perf"
    "lxc"
    "debootstrap"
    "qemu"
    "util-linux"
    "gcc-toolchain"
    "make"))
