# The frame fuzzer (tests/e2e/test_fuzz_frames.py) at length: mutated requests of every API and
# version against the broker process. `make test` runs it with a few thousand frames.
#   make fuzz                          FUZZ_FRAMES frames (default 500000, about 5 minutes)
#   make fuzz FUZZ_FRAMES=2000000 FUZZ_SEED=1234

FUZZ_FRAMES ?= 500000
FUZZ_SEED ?=

.PHONY: fuzz

fuzz: install-test
	EOS_FUZZ_FRAMES=$(FUZZ_FRAMES) $(if $(FUZZ_SEED),EOS_FUZZ_SEED=$(FUZZ_SEED)) \
		$(PY) -m pytest -p no:cacheprovider -o timeout=0 tests/e2e/test_fuzz_frames.py tests/protocol/test_bounds.py
