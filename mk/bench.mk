# Benchmarks side by side with Apache Kafka (issue 6).
# Included by the top-level Makefile (`include mk/*.mk`).
#   make bench                       both brokers, BENCH_SIZE=small (3 rounds)
#   make bench BENCH_SIZE=full       1 GiB read_committed topic, 5 rounds
#   make bench BENCH_ARGS="--only eosbroker --cases w1-p1,w6"
#   make bench-smoke                 both brokers at the tiny size (about a minute)

MVN ?= mvn
BENCH_PY = $(or $(PY),python3)
BENCH_SIZE ?= small
BENCH_ARGS ?=
KAFKA_DIST_DIR := $(CURDIR)/bench/kafka-dist
BENCH_POM := bench/pom.xml

.PHONY: bench bench-smoke kafka-dist install-bench

# matplotlib and psutil for the harness; the smoke test in tests/bench needs them too.
$(VENV)/.installed-bench: pyproject.toml $(VENV)/.created
	$(PIP) install -q -e '.[test,bench]'
	touch $@

install-bench: $(VENV)/.installed-bench

test: $(VENV)/.installed-bench

# Apache Kafka's broker jars; the stamp follows the pom, mvn tries offline first.
kafka-dist: $(KAFKA_DIST_DIR)/.stamp

$(KAFKA_DIST_DIR)/.stamp: $(BENCH_POM)
	rm -rf $(KAFKA_DIST_DIR)
	$(MVN) -B -q -o -f $(BENCH_POM) dependency:copy-dependencies \
	  || $(MVN) -B -q -f $(BENCH_POM) dependency:copy-dependencies
	touch $@

bench: $(VENV)/.installed-bench kafka-dist kafka-tools compile
	$(BENCH_PY) -m bench --size $(BENCH_SIZE) $(BENCH_ARGS)

bench-smoke: $(VENV)/.installed-bench kafka-dist kafka-tools compile
	$(BENCH_PY) -m bench --size tiny $(BENCH_ARGS)
