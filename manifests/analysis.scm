;; benchbook analysis environment (Guix manifest) at the commit pinned in channels.scm:
;;   guix time-machine -C channels.scm -- shell -m manifests/analysis.scm
;; Python packages Guix lacks at that commit, and those whose Guix version differs from the pip
;; lock, are listed in manifests/exceptions.toml (`benchbook env check` enforces that the list is
;; complete); inside the Guix shell they come from the hashed pip lock:
;;   python -m venv .venv && .venv/bin/pip install --require-hashes --no-deps -r manifests/requirements.lock
;; A name without "@version" takes the version the pinned commit defines; manifests/guix-packages.toml
;; records, for every name, whether its definition was read at that commit, shown to exist there
;; (named as an input at the pin, or defined before and after it), or not verified.
(specifications->manifest
  (list
    ;; interpreter and build tools
    "python"
    "python-pip"
    "guile"
    ;; numerics and data
    "python-numpy"
    "python-numba"
    "python-pandas"
    "python-pyarrow"
    "python-scipy"
    "python-zstandard"
    ;; figures
    "python-plotly"
    ;; notebooks
    "python-nbclient@0.10.0"
    "python-papermill@2.6.0"
    "python-nbformat"
    "python-ipykernel"
    "jupyter"
    ;; command line, schemas, tests
    "python-rich"
    "python-tqdm"
    "python-jsonschema"
    "python-pytest"
    "python-pytest-timeout"))
