# Spark side: the Kafka connector jars and the demo pipeline.
# Included by the top-level Makefile (`include mk/*.mk`).

MVN ?= mvn
# the project venv's python once the top-level Makefile has defined it
DEMO_PY = $(or $(PY),python3)
SPARK_JARS_DIR := $(CURDIR)/spark-jars
SPARK_POM := spark/pom.xml

.PHONY: spark-jars demo demo-small

# The stamp depends on the pom, so a version bump re-copies and an unchanged pom
# costs nothing; mvn runs offline-first (-o) when the jars are already cached.
spark-jars: $(SPARK_JARS_DIR)/.stamp

$(SPARK_JARS_DIR)/.stamp: $(SPARK_POM)
	rm -rf $(SPARK_JARS_DIR)
	$(MVN) -B -q -Dstyle.color=never -o -f $(SPARK_POM) dependency:copy-dependencies -DoutputDirectory=$(SPARK_JARS_DIR) \
	  || $(MVN) -B -q -Dstyle.color=never -f $(SPARK_POM) dependency:copy-dependencies -DoutputDirectory=$(SPARK_JARS_DIR)
	touch $@

demo: install-test spark-jars
	$(DEMO_PY) -m pipeline.demo --jars-dir $(SPARK_JARS_DIR)

demo-small: install-test spark-jars
	$(DEMO_PY) -m pipeline.demo --jars-dir $(SPARK_JARS_DIR) --small
