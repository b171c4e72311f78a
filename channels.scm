;; benchbook: the pinned Guix channel.  Rebuild the analysis environment of any run with
;;   guix time-machine -C channels.scm -- shell -m manifests/analysis.scm
;; (every run directory keeps its own copy of this file and of the manifest it used).
;;
;; The commit is GNU Guix master of 2024-09-29 23:50:21 +0800 ("gnu: waypipe: Update to 0.9.1.",
;; signed by Zheng Junjie, key 7EBE A494 60CE 5E2C 0875  7FDB 3B5A A993 E1A2 DFF0), checked on a
;; full-history copy of upstream Guix with `benchbook env guix-pin --guix-git DIR` (docs/guix-pin.md).
;; What it defines for every name benchbook uses: manifests/guix-index-093f2fb8.tsv.
(list (channel
        (name 'guix)
        (url "https://git.savannah.gnu.org/git/guix.git")
        (branch "master")
        (commit "093f2fb8722fafcc7c1555cd845289096849f4a2")
        (introduction
          (make-channel-introduction
            "9edb3f66fd807b096b48283debdcddccfea34bad"
            (openpgp-fingerprint
              "BBB0 2DDF 2CEA F6A8 0D1D  E643 A2A0 6DF2 A33A 54FA")))))
