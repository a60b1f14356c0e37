# Kafka Connect and MirrorMaker 2 for the e2e suite, fetched with Maven like the other jars:
# tools/connect-pom.xml copies them and their dependencies into tools/kafka-connect/.
# tests/e2e/connect_process.py runs them (ConnectDistributed, MirrorMaker) from there.

MVN ?= mvn
KAFKA_CONNECT_DIR := $(CURDIR)/tools/kafka-connect
CONNECT_POM := tools/connect-pom.xml

.PHONY: kafka-connect

kafka-connect: $(KAFKA_CONNECT_DIR)/.stamp

$(KAFKA_CONNECT_DIR)/.stamp: $(CONNECT_POM)
	rm -rf $(KAFKA_CONNECT_DIR)
	$(MVN) -B -q -o -f $(CONNECT_POM) dependency:copy-dependencies \
	  || $(MVN) -B -q -f $(CONNECT_POM) dependency:copy-dependencies
	touch $@

test: kafka-connect
