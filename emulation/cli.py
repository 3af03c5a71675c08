"""The ``saatp`` command line.

    saatp p4 check PROGRAM.p4 [-I DIR]... [-D NAME[=VALUE]]... [--p4runtime-files OUT]
    saatp p4 stf PROGRAM.p4 TEST.stf [-I DIR]... [-v]
    saatp p4 run PROGRAM.p4 --packet PORT HEX ... [--commands FILE]
    saatp plan umpipe|lyapunov|cgp [...]
    saatp profile [...]; saatp train pipeline [...]
    saatp demo
    saatp switch ...; saatp switch-cli [--control-addr 127.0.0.1:PORT] [COMMAND]
    saatp ptf PROGRAM.p4 --test-dir DIR [--mode udp|veth] [--ports N] [-- PTF ARGS...]

Each subcommand imports its implementation lazily, so ``saatp --help`` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys
from typing import Sequence


def _add_p4(sub: argparse._SubParsersAction) -> None:
    p4 = sub.add_parser("p4", help="check P4 programs and run them on the embedded target")
    s = p4.add_subparsers(dest="p4cmd", required=True, metavar="{check,stf,run}")

    c = s.add_parser("check", help="front end only: exit 0, or print the errors (file:line:col)")
    c.add_argument("program")
    c.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    c.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]")
    c.add_argument("--p4runtime-files", metavar="OUT",
                   help="write the P4Info (.txtpb/.txt text, .bin binary, .json JSON by extension)")
    c.add_argument("--allow-target-extensions", action="store_true", help="accept constructs p4c's BMv2 back end refuses (programs for the embedded target only)")
    c.set_defaults(func=_p4_check)

    t = s.add_parser("stf", help="run a test in p4c's STF format on the embedded target")
    t.add_argument("program")
    t.add_argument("stf")
    t.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    t.add_argument("-v", "--verbose", action="store_true")
    t.add_argument("--allow-target-extensions", action="store_true", help="accept constructs p4c's BMv2 back end refuses (programs for the embedded target only)")
    t.add_argument("--lenient", action="store_true", help="accept STF forms p4c's own runner refuses")
    t.set_defaults(func=_p4_stf)

    r = s.add_parser("run", help="push packets through a program and print what comes out")
    r.add_argument("program")
    r.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    r.add_argument("--commands", metavar="FILE",
                   help="control-plane commands in STF syntax (add, setdefault, mc_*, mirroring_add, register_write)")
    r.add_argument("--packet", nargs=2, action="append", default=[], metavar=("PORT", "HEX"))
    r.add_argument("--log", action="store_true", help="per-packet trace")
    r.add_argument("--allow-target-extensions", action="store_true", help="accept constructs p4c's BMv2 back end refuses (programs for the embedded target only)")
    r.set_defaults(func=_p4_run)


def _defines(items: Sequence[str]) -> dict[str, str]:
    from emulation.p4.preprocess import parse_defines
    return parse_defines(items)


def _p4_check(args: argparse.Namespace) -> int:
    from emulation.p4.errors import P4Error, P4NotRunnable
    from emulation.v1model.load import load_program
    try:
        prog = load_program(args.program, include_dirs=args.include, defines=_defines(args.define),
                            allow_target_extensions=args.allow_target_extensions)
    except P4NotRunnable as e:
        # the front end's checks passed (as p4c's p4test): not an error of the program, but
        # it is no v1model program (no main, or main is not a V1Switch)
        print(f"{e.loc}: warning: {e.message}", file=sys.stderr)
        if args.p4runtime_files:
            print(f"{args.p4runtime_files}: not written (no V1Switch main)", file=sys.stderr)
            return 1
        return 0
    except P4Error as e:
        print(e, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{args.program}: {e.strerror or e}", file=sys.stderr)
        return 1
    if args.p4runtime_files:
        from emulation.p4runtime.p4info import p4info_from_program, write_p4info
        write_p4info(p4info_from_program(prog), args.p4runtime_files)
    return 0


def _p4_stf(args: argparse.Namespace) -> int:
    from emulation.stf.runner import main as stf_main
    argv = [args.program, args.stf]
    for d in args.include:
        argv += ["-I", d]
    if args.verbose:
        argv.append("-v")
    if args.allow_target_extensions:
        argv.append("--allow-target-extensions")
    if args.lenient:
        argv.append("--lenient")
    return stf_main(argv)


def _p4_run(args: argparse.Namespace) -> int:
    from emulation.p4.errors import P4Error
    from emulation.v1model.load import load_switch
    try:
        sw = load_switch(args.program, include_dirs=args.include,
                         allow_target_extensions=args.allow_target_extensions,
                         log=print if args.log else None)
    except P4Error as e:
        print(e, file=sys.stderr)
        return 1
    if args.commands:
        from emulation.stf.parser import StfError
        from emulation.stf.runner import apply_commands
        try:
            with open(args.commands) as f:
                problems = apply_commands(sw, f.read(), args.commands)
        except (StfError, OSError) as e:
            print(e, file=sys.stderr)
            return 2
        for msg in problems or ():
            print(msg, file=sys.stderr)
    for port, hexs in args.packet:
        try:
            data = bytes.fromhex(hexs.replace(" ", ""))
            port = int(port, 0)
        except ValueError as e:
            print(f"saatp p4 run: bad --packet {port} {hexs}: {e}", file=sys.stderr)
            return 2
        print(f"in  port {port}: {data.hex()}")
        for p, b in sw.process(int(port), data):
            print(f"out port {p}: {b.hex()}")
    return 0


# subcommands whose implementation is imported only when they run (they pull numpy, torch,
# matplotlib): (group, name) -> (module, help)
LAZY = {
    ("plan", "umpipe"): ("host_agent.scheduling.umpipe.cli",
                         "unequal-microbatch pipelines (DGAP/TiDGAP) vs GPipe/PipeDream"),
    ("plan", "lyapunov"): ("host_agent.scheduling.online.cli", "online joint DP+MP planner (drift-plus-penalty)"),
    ("plan", "cgp"): ("host_agent.scheduling.cgp.cli", "cooperative grouping: intra-group sync, inter-group async"),
    ("experiment", "straggler"): ("emulation.experiment", "SA-ATP vs baselines on the in-process harness"),
    ("experiment", "mininet"): ("emulation.net.runner", "the same in Mininet, with saatp switch or BMv2"),
    ("train", "pipeline"): ("host_agent.scheduling.train.cli",
                            "pipeline training, one process per stage (UMPIPE, GPipe, 1F1B, torch schedules)"),
    ("train", "groups"): ("host_agent.scheduling.groups.cli",
                          "data+model-parallel groups under time-varying CPU quotas (Lyapunov vs baselines)"),
    ("train", "cgp"): ("host_agent.scheduling.cgp.train_cli",
                       "CGP on real processes: sync groups, async parameter server (vs BSP/ASP/SSP)"),
}
GROUP_HELP = {"plan": "scheduling planners for heterogeneous clusters",
              "experiment": "protocol experiments (SA-ATP and baselines)",
              "train": "real training runs"}
# one-word lazy subcommands: name -> (module, help)
LAZY_SINGLE = {"profile": ("host_agent.scheduling.profile.cli",
                           "time a model's layers and links on this machine (per CPU quota) for the planners")}


def _add_lazy_groups(sub: argparse._SubParsersAction) -> None:
    for group, ghelp in GROUP_HELP.items():
        g = sub.add_parser(group, help=ghelp)
        names = [n for (gr, n) in LAZY if gr == group]
        s = g.add_subparsers(dest=group, required=True, metavar="{" + ",".join(names) + "}")
        for (gr, n), (_, h) in LAZY.items():
            if gr == group:
                s.add_parser(n, help=h, add_help=False)


def _run_lazy(group: str, name: str | None, rest: list[str]) -> int:
    mod, h = LAZY[(group, name)] if name is not None else LAZY_SINGLE[group]
    try:
        m = importlib.import_module(mod)
    except ImportError as e:
        return _missing(e)
    p = argparse.ArgumentParser(prog=f"saatp {group}" + (f" {name}" if name else ""), description=h)
    m.add_arguments(p)
    return int(m.run(p.parse_args(rest)) or 0)


def _missing(e: Exception) -> int:
    print(f"saatp: this command is unavailable: {e}", file=sys.stderr)
    return 2


def _add_demo(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("demo", help="the main demo on the embedded P4 target")
    d.add_argument("--out", default="results/demo", help="where to write results (default results/demo)")
    d.add_argument("--quick", action="store_true", help="a smaller straggler experiment")
    d.set_defaults(func=lambda a: importlib.import_module("emulation.demo").run(a))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="saatp", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    _add_p4(sub)
    sub.add_parser("switch", help="the switch process, like simple_switch_grpc (saatp switch --help)",
                   add_help=False)
    sub.add_parser("switch-cli", help="runtime commands for a running switch: set_queue_rate, set_queue_depth "
                                      "(saatp switch-cli --help)", add_help=False)
    sub.add_parser("ptf", help="run a PTF test directory against saatp switch (saatp ptf --help)",
                   add_help=False)
    _add_lazy_groups(sub)
    for n, (_, h) in LAZY_SINGLE.items():
        sub.add_parser(n, help=h, add_help=False)
    _add_demo(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Ctrl-C ends it with status 130 and one line instead of a traceback
    (a run directory it leaves behind is named by :func:`host_agent.scheduling.run_dirs.run_dir`)."""
    try:
        return _main(argv)
    except KeyboardInterrupt as e:
        # the command is over: more Ctrl-C's would only interrupt the interpreter's exit (a
        # traceback from an atexit callback after this line)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if not getattr(e, "run_dir_left", None):
            print("saatp: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["switch"]:
        # the switch process keeps simple_switch_grpc's own command-line shape
        from emulation.switchd import main as sw_main
        return sw_main(argv[1:])
    if argv[:1] == ["switch-cli"]:
        from emulation.switch_control import main as cli_main
        return cli_main(argv[1:])
    if argv[:1] == ["ptf"]:
        from emulation.testing.ptf_runner import main as ptf_main
        return ptf_main(argv[1:], prog="saatp ptf")
    if len(argv) >= 2 and (argv[0], argv[1]) in LAZY:
        return _run_lazy(argv[0], argv[1], argv[2:])
    if argv[:1] and argv[0] in LAZY_SINGLE:
        return _run_lazy(argv[0], None, argv[1:])
    args = build_parser().parse_args(argv)
    rc = args.func(args)
    return int(rc or 0)


def switch_main(argv: Sequence[str] | None = None) -> int:
    """``saatp-switch``: the switch process (same as ``saatp switch``)."""
    from emulation.switchd import main as sw_main
    return sw_main(argv)


if __name__ == "__main__":
    sys.exit(main())
