# Everything sets itself up: a fresh machine needs only python3 (3.11+) and make.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DB ?= data/demo.db

.PHONY: demo test durations lint bench schema reference clean

# constraints.txt pins every package (scripts/lock_constraints.py regenerates it).
$(BIN)/seahorse: pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test]'
	touch $@

demo: $(BIN)/seahorse
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	SEAHORSE_DB=$(DEMO_DB) $(BIN)/seahorse index --text "Raspberry Pi 5 can bog down when a local model overruns RAM."
	SEAHORSE_DB=$(DEMO_DB) $(BIN)/seahorse index --text "On Raspberry Pi 5, that kind of slowdown usually means memory pressure rather than a CPU bottleneck."
	SEAHORSE_DB=$(DEMO_DB) $(BIN)/seahorse index --text "Raspberry Pi 5 users often enable zram so compressed pages stay in memory before disk swap."
	SEAHORSE_DB=$(DEMO_DB) $(BIN)/seahorse search "What should I switch on when a Pi 5 starts crawling during on-device inference?"

# The suite on TEST_WORKERS processes (pytest-xdist); the 30 slowest tests are listed at the end.
TEST_WORKERS ?= 2
test: $(BIN)/seahorse
	$(BIN)/ruff check seahorse tests scripts
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=30 --junitxml=.pytest_cache/junit.xml $(PYTEST_ARGS)

# docs/test-durations.md from the last `make test`, rewritten only when it moved (15 %).
durations:
	$(PY) scripts/test_durations.py .pytest_cache/junit.xml --if-moved 15

lint: $(BIN)/seahorse
	$(BIN)/ruff check seahorse tests scripts

bench: $(BIN)/seahorse
	$(BIN)/python scripts/bench_multihop.py
	$(BIN)/python scripts/bench_walk.py

schema: $(BIN)/seahorse
	$(BIN)/python scripts/gen_schema.py --write

reference: $(BIN)/seahorse
	$(BIN)/python scripts/gen_reference.py
	$(BIN)/python scripts/gen_docs.py

clean:
	rm -rf $(VENV) data .pytest_cache .ruff_cache
