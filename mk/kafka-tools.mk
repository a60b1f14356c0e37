# Apache Kafka's command-line tools for the e2e suite (issue 11), fetched with Maven like the
# other jars: tools/pom.xml copies kafka-tools and its dependencies into tools/kafka-tools/.
# tests/kafka_tools.py runs them by script name (kafka-topics, kafka-transactions, ...).

MVN ?= mvn
KAFKA_TOOLS_DIR := $(CURDIR)/tools/kafka-tools
TOOLS_POM := tools/pom.xml

.PHONY: kafka-tools

kafka-tools: $(KAFKA_TOOLS_DIR)/.stamp

$(KAFKA_TOOLS_DIR)/.stamp: $(TOOLS_POM)
	rm -rf $(KAFKA_TOOLS_DIR)
	$(MVN) -B -q -o -f $(TOOLS_POM) dependency:copy-dependencies \
	  || $(MVN) -B -q -f $(TOOLS_POM) dependency:copy-dependencies
	touch $@

test: kafka-tools
