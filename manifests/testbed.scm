;; benchbook testbed environment (Guix manifest): the analysis environment plus the programs the
;; local and SSH testbeds drive (packet generation and capture, LXC, perf, link emulation).
;;   guix time-machine -C channels.scm -- shell -m manifests/testbed.scm
;; Kept self-contained (a run directory stores one manifest); the entries of manifests/analysis.scm
;; come first and must be the same (`benchbook env check` verifies it).
;; No "dpdk": dpdk-testpmd comes from Debian's dpdk packages (manifests/debian-packages.txt).
(specifications->manifest
  (list
    ;; analysis environment (same as manifests/analysis.scm)
    "python-next"
    "make"
    "guile"
    ;; testbed programs
    "iproute2"
    "ethtool"
    "tcpdump"
    "wireshark"
    "iperf"
    "perf"
    "lxc"
    "debootstrap"
    "qemu"
    "util-linux"
    "gcc-toolchain"))
