;; benchbook: the pinned Guix channel.  Rebuild the analysis environment of any run with
;;   guix time-machine -C channels.scm -- shell -m manifests/analysis.scm
;; (every run directory keeps its own copy of this file and of the manifest it used).
;;
;; The commit is a GNU Guix commit of 2024 (read through the Millak/guix GitHub mirror of Guix);
;; the package names and versions the manifests rely on were checked against Guix's package
;; definitions: manifests/guix-packages.toml records what was read at which commit.
(list (channel
        (name 'guix)
        (url "https://git.savannah.gnu.org/git/guix.git")
        (branch "master")
        (commit "003658b0fc5eeaa4d59f0162bfd942088f08385b")
        (introduction
          (make-channel-introduction
            "9edb3f66fd807b096b48283debdcddccfea34bad"
            (openpgp-fingerprint
              "BBB0 2DDF 2CEA F6A8 0D1D  E643 A2A0 6DF2 A33A 54FA")))))
