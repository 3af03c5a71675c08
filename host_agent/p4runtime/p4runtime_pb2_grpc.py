"""gRPC binding of the ``p4.v1.P4Runtime`` service (what grpcio-tools would generate).

Written by hand from the service definition in p4runtime.proto so that it does not
depend on the grpcio-tools version: six methods, their streaming shapes and types.
"""
from __future__ import annotations

import grpc

from . import p4runtime_pb2 as pb

SERVICE = "p4.v1.P4Runtime"

# name -> (request class, response class, request streaming, response streaming)
METHODS = {
    "Write": (pb.WriteRequest, pb.WriteResponse, False, False),
    "Read": (pb.ReadRequest, pb.ReadResponse, False, True),
    "SetForwardingPipelineConfig": (pb.SetForwardingPipelineConfigRequest,
                                    pb.SetForwardingPipelineConfigResponse, False, False),
    "GetForwardingPipelineConfig": (pb.GetForwardingPipelineConfigRequest,
                                    pb.GetForwardingPipelineConfigResponse, False, False),
    "StreamChannel": (pb.StreamMessageRequest, pb.StreamMessageResponse, True, True),
    "Capabilities": (pb.CapabilitiesRequest, pb.CapabilitiesResponse, False, False),
}


class P4RuntimeStub:
    """Client stub: ``stub.Write(req)``, ``stub.Read(req)`` (iterator), ``stub.StreamChannel(iter)``..."""

    def __init__(self, channel: grpc.Channel):
        for name, (req, resp, cs, ss) in METHODS.items():
            factory = {(False, False): channel.unary_unary, (False, True): channel.unary_stream,
                       (True, False): channel.stream_unary, (True, True): channel.stream_stream}[(cs, ss)]
            setattr(self, name, factory(f"/{SERVICE}/{name}", request_serializer=req.SerializeToString,
                                        response_deserializer=resp.FromString))


class P4RuntimeServicer:
    """Base class: every method answers UNIMPLEMENTED until overridden."""

    def _unimplemented(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "method not implemented")

    Write = Read = SetForwardingPipelineConfig = GetForwardingPipelineConfig = _unimplemented
    StreamChannel = Capabilities = _unimplemented


def add_P4RuntimeServicer_to_server(servicer: P4RuntimeServicer, server: grpc.Server) -> None:
    handlers = {}
    for name, (req, resp, cs, ss) in METHODS.items():
        make = {(False, False): grpc.unary_unary_rpc_method_handler,
                (False, True): grpc.unary_stream_rpc_method_handler,
                (True, False): grpc.stream_unary_rpc_method_handler,
                (True, True): grpc.stream_stream_rpc_method_handler}[(cs, ss)]
        handlers[name] = make(getattr(servicer, name), request_deserializer=req.FromString,
                              response_serializer=resp.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
