;; benchbook: the pinned Guix channel.  Rebuild the analysis environment of any run with
;;   guix time-machine -C channels.scm -- shell -m manifests/analysis.scm
;; (every run directory keeps its own copy of this file and of the manifest it used).
;;
;; The commit is a GNU Guix master commit (read from the guix-mirror/guix mirror); the package
;; names and versions the manifests rely on were checked against Guix's package definitions:
;; see manifests/guix-packages.toml for what was read where.
(list (channel
        (name 'guix)
        (url "https://git.savannah.gnu.org/git/guix.git")
        (branch "master")
        (commit "0d2371d215c81c97b92d697330a561c91c2062c4")
        (introduction
          (make-channel-introduction
            "9edb3f66fd807b096b48283debdcddccfea34bad"
            (openpgp-fingerprint
              "BBB0 2DDF 2CEA F6A8 0D1D  E643 A2A0 6DF2 A33A 54FA")))))
