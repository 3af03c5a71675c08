"""The server's error type and its mapping onto gRPC status codes."""
from __future__ import annotations

from typing import Any

import grpc
from google.rpc import code_pb2

from host_agent.p4runtime.codec import CodecError


class P4RTError(Exception):
    """One failed update/request: a google.rpc code and a message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def as_p4rt_error(e: CodecError) -> P4RTError:
    """A value the codec refused: INVALID_ARGUMENT with the codec's message."""
    return P4RTError(code_pb2.INVALID_ARGUMENT, str(e))


def grpc_code(code: int) -> grpc.StatusCode:
    for c in grpc.StatusCode:
        if c.value[0] == code:
            return c
    return grpc.StatusCode.UNKNOWN


def abort(context: Any, err: P4RTError) -> None:
    context.abort(grpc_code(err.code), err.message)
