"""The request types each kio-read handler receives: one module per API, named as kio names it."""
