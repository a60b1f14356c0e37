"""The request types each kio-read handler receives: one module per API, named as kio names it.

Each module holds one union per entity over the versions its handler serves, plus version-range
unions where shapes differ (told apart by the entity's __version__); tests/broker/test_request_types.py
checks them against the dispatch table. Handlers import them for type checking only: importing
them at run time would load every version's kio classes.
"""
