"""Authentication: TLS (tls.py) and SASL (sasl.py with plain.py and scram.py) per listener, read
with Kafka's property names (settings.py). What a connection authenticates as is its Session
(broker/principal.py)."""
