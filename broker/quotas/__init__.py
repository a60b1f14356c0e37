"""Client quotas: producer_byte_rate and consumer_byte_rate, set per user and client id."""
