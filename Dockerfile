# syntax=docker/dockerfile:1
# Two images from one file (see docker-compose.yml):
#   target "broker": eosbroker itself;
#   target "spark":  Java 17 + pyspark + Spark's Kafka connector jars, running `python -m pipeline`.

# The broker's package, named once for both images.
FROM scratch AS source
COPY pyproject.toml /app/
COPY protocol /app/protocol
COPY storage /app/storage
COPY coordinator /app/coordinator
COPY broker /app/broker

FROM python:3.11-slim-bookworm AS broker
WORKDIR /app
COPY --from=source /app ./
RUN pip install --no-cache-dir .
VOLUME /data
EXPOSE 9092
ENTRYPOINT ["python", "-m", "broker"]
# Listens on every interface of the container and advertises 127.0.0.1:9092, which is right for
# `docker run -p 127.0.0.1:9092:9092` and a client on the host (see docker-compose.yml for why).
CMD ["--data-dir", "/data", "--set", "listeners=PLAINTEXT://0.0.0.0:9092", \
     "--set", "advertised.listeners=PLAINTEXT://127.0.0.1:9092"]

# The connector and what it needs beyond pyspark's own jars, resolved from spark/pom.xml.
FROM maven:3.9-eclipse-temurin-17 AS spark-jars
COPY spark/pom.xml /build/pom.xml
RUN mvn -B -q -f /build/pom.xml dependency:copy-dependencies -DoutputDirectory=/spark-jars

FROM python:3.11-slim-bookworm AS spark
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=source /app ./
# the `spark` extra pins pyspark to the connector's version; `clients` has confluent-kafka for the demo producer
RUN pip install --no-cache-dir ".[spark,clients]"
COPY pipeline ./pipeline
COPY --from=spark-jars /spark-jars ./spark-jars
ENV SPARK_LOCAL_IP=127.0.0.1
ENTRYPOINT ["python", "-m", "pipeline"]
