"""P4Runtime for the embedded target: P4Info generation, the device and a gRPC server
(stubs, codec and client live on the host side, in :mod:`host_agent.p4runtime`)."""
