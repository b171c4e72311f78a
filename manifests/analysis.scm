;; benchbook analysis environment (Guix manifest) at the commit pinned in channels.scm:
;;   guix time-machine -C channels.scm -- shell -m manifests/analysis.scm
;; At that commit Guix's Python packages build with Python 3.10.7 (manifests/guix-index-093f2fb8.tsv)
;; while benchbook requires Python >= 3.11, so the interpreter is "python-next" (CPython 3.12.2,
;; with pip) and every Python package comes from the hashed pip lock inside the shell:
;;   python3 -m venv .venv && .venv/bin/pip install --require-hashes --no-deps -r manifests/requirements.lock
;; manifests/exceptions.toml lists each pip-lock package with what Guix has of it at the pin
;; (`benchbook env check` verifies every name and version here against the index).
(specifications->manifest
  (list
    ;; interpreter (pip included), the Makefile, Scheme
    "python-next"
    "make"
    "guile"))
