"""The client side of framestream, in Python: the start of a client library for agents and tools.

Today it holds `wire` (the JSON a client sends). It depends on `framestream.core` for the message classes and
never on the service (`framestream.server`, `framestream.frames`, `framestream.media`).
"""
