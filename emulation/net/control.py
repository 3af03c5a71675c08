"""Programming switches over P4Runtime: the tutorials' runtime JSON, counters, pipelines."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from emulation.p4runtime.p4info import p4info_from_program, read_p4info
from emulation.v1model.load import load_program
from host_agent.match import Exact, Lpm, Optional_, Range, Ternary
from host_agent.p4runtime import p4info_pb2
from host_agent.p4runtime.client import P4RuntimeClient

from .topo import TopologyError, parse_value


def connect(address: str, device_id: int, election_id: int = 1, timeout: float = 10.0):
    return P4RuntimeClient(address, device_id=device_id, election_id=election_id, timeout=timeout)


def p4info_for_source(program: str, include_dirs=()) -> Any:
    """The P4Info of a P4 source program, from the embedded front end."""
    return p4info_from_program(load_program(program, include_dirs=list(include_dirs)))


def ensure_pipeline(client, kind: str, program: str | None, p4info_path: str | None = None) -> None:
    """Make sure the client knows the switch's P4Info.

    saatp switch started with a program answers GetForwardingPipelineConfig with it; BMv2
    (or a switch started with ``--no-p4``) gets SetForwardingPipelineConfig with p4c's
    P4Info and JSON (BMv2) or the P4 source (saatp), as the tutorials' controllers do."""
    try:
        info = client.load_p4info()
        if len(info.tables) or len(info.actions):
            return
    except Exception:  # noqa: BLE001 - no pipeline yet
        pass
    if program is None:
        raise TopologyError("the switch has no pipeline and no program was given")
    if kind == "bmv2":
        if not p4info_path:
            raise TopologyError("BMv2 needs the P4Info that p4c wrote (--p4info FILE)")
        info = read_p4info(p4info_path)
    else:
        info = p4info_for_source(program)
    client.set_pipeline(info, Path(program).read_bytes())


def _match(client, table: str, match: dict[str, Any]) -> dict[str, Any]:
    t = client._idx().get("table", table)
    out = {}
    for name, v in match.items():
        mf = next((m for m in t.match_fields if m.name == name or m.name.endswith("." + name)), None)
        if mf is None:
            raise TopologyError(f"table {table}: no match field {name!r}")
        kind = p4info_pb2.MatchField.MatchType.Name(mf.match_type)
        if kind == "EXACT":
            out[mf.name] = Exact(parse_value(v))
        elif kind == "LPM":
            if not isinstance(v, list) or len(v) != 2:
                raise TopologyError(f"table {table}: LPM field {name} wants [value, prefix_len], got {v!r}")
            out[mf.name] = Lpm(parse_value(v[0]), int(v[1]))
        elif kind == "TERNARY":
            if not isinstance(v, list) or len(v) != 2:
                raise TopologyError(f"table {table}: ternary field {name} wants [value, mask], got {v!r}")
            out[mf.name] = Ternary(parse_value(v[0]), parse_value(v[1]))
        elif kind == "RANGE":
            if not isinstance(v, list) or len(v) != 2:
                raise TopologyError(f"table {table}: range field {name} wants [low, high], got {v!r}")
            out[mf.name] = Range(parse_value(v[0]), parse_value(v[1]))
        elif kind == "OPTIONAL":
            out[mf.name] = Optional_(parse_value(v))
        else:
            raise TopologyError(f"table {table}: match kind {kind} of {name} is not supported")
    return out


def apply_runtime(client, rt: dict) -> int:
    """Install a tutorials' runtime JSON (tables, multicast groups, clone sessions).
    Returns how many entities were written."""
    n = 0
    for e in rt.get("table_entries", []):
        table = e["table"]
        params = {k: parse_value(v) for k, v in (e.get("action_params") or {}).items()}
        if e.get("default_action"):
            client.set_default(table, e["action_name"], params)
        else:
            client.insert(table, _match(client, table, e.get("match", {})), e["action_name"], params,
                          int(e.get("priority", 0)))
        n += 1
    for g in rt.get("multicast_group_entries", []):
        client.multicast_group(int(g["multicast_group_id"]),
                               [(int(r["egress_port"]), int(r.get("instance", 0))) for r in g["replicas"]])
        n += 1
    for c in rt.get("clone_session_entries", []):
        for r in c["replicas"][:1]:
            client.clone_session(int(c["clone_session_id"]), int(r["egress_port"]))
        n += 1
    return n


def read_counters(client) -> dict[str, dict[int, tuple[int, int]]]:
    """Every indexed counter of the pipeline: name -> {index: (packets, bytes)} (non-zero only)."""
    out = {}
    idx = client._idx()
    for c in idx.counters.values():
        try:
            vals = client.read_counter(c.preamble.name)
        except Exception as e:  # noqa: BLE001 - report, do not fail the experiment
            out[c.preamble.name] = {"error": str(e)}
            continue
        out[c.preamble.name] = {i: v for i, v in vals.items() if v != (0, 0)}
    return out
