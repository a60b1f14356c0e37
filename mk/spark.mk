# Spark side: the Kafka connector jars and the demo pipeline.
# Included by the top-level Makefile (`include mk/*.mk`).

PYTHON ?= python
MVN ?= mvn
SPARK_JARS_DIR := $(CURDIR)/spark-jars
SPARK_POM := spark/pom.xml

.PHONY: spark-jars demo demo-small

# The stamp depends on the pom, so a version bump re-copies and an unchanged pom
# costs nothing; mvn runs offline-first (-o) when the jars are already cached.
spark-jars: $(SPARK_JARS_DIR)/.stamp

$(SPARK_JARS_DIR)/.stamp: $(SPARK_POM)
	rm -rf $(SPARK_JARS_DIR)
	$(MVN) -B -q -o -f $(SPARK_POM) dependency:copy-dependencies -DoutputDirectory=$(SPARK_JARS_DIR) \
	  || $(MVN) -B -q -f $(SPARK_POM) dependency:copy-dependencies -DoutputDirectory=$(SPARK_JARS_DIR)
	touch $@

demo: spark-jars
	$(PYTHON) -m pipeline.demo --jars-dir $(SPARK_JARS_DIR)

demo-small: spark-jars
	$(PYTHON) -m pipeline.demo --jars-dir $(SPARK_JARS_DIR) --small
