"""The host side of P4Runtime: protobuf stubs, the byte-string codec, P4Info look-ups and a client.

The server (``emulation.p4runtime``) imports these; nothing here imports ``emulation``.
"""
