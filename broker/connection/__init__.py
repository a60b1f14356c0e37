"""One client connection, in three parts that each run without a socket (tests/broker/connection
drive them with a fake transport, as h11's ConnectionPair drives a protocol):

- framing.py: size-prefixed frames out of received bytes, the pipelining limit, pausing reads
  under back-pressure, memory and quota throttles, and the idle and receive time limits;
- auth_gate.py: the TLS principal, the SASL state before COMPLETE, re-authentication and the
  session's expiry;
- requests.py: header decode, the API table (broker/dispatch.py), the handler call;
- answers.py: the answers in request order, a Produce's arriving once it is durable while the
  requests behind it are already sequenced (pipelining).

protocol.py joins them as the asyncio protocol the listeners serve.
"""

from .protocol import KafkaConnection

__all__ = ("KafkaConnection",)
