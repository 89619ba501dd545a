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
	SEAHORSE_DB=$(DEMO_DB) $(BIN)/seahorse index --text "The staging database runs on kestrel."
	SEAHORSE_DB=$(DEMO_DB) $(BIN)/seahorse index --text "kestrel is a Hetzner box in the Falkenstein data centre."
	SEAHORSE_DB=$(DEMO_DB) $(BIN)/seahorse index --text "Production runs on two AWS machines in Frankfurt."
	SEAHORSE_DB=$(DEMO_DB) $(BIN)/seahorse index --text "Backups of every database go to a Backblaze bucket each night."
	SEAHORSE_DB=$(DEMO_DB) $(BIN)/seahorse search "In which city is the staging database hosted?"

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
