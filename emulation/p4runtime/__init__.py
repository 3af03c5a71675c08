"""P4Runtime for the embedded target: schema stubs, P4Info generation, a gRPC server and a client."""
