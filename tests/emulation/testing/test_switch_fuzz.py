"""The switch-process fuzzer (emulation/testing/switch_fuzz.py) on a bounded number of frames;
scripts/fuzz_switchd.py runs the same code on 1M frames per program."""
from __future__ import annotations

import random

import pytest
from testsupport import paths

from emulation.testing.switch_fuzz import (
    FuzzFailure,
    fuzz_program,
    mutate,
    p4src_programs,
    random_frame,
)

PROGRAMS = p4src_programs(paths.REPO)


def test_every_p4src_program_is_fuzzed():
    assert {p.name for p in PROGRAMS} >= {"basic_router.p4", "bench_reg64.p4", "saatp.p4"}


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_fuzz_frames_are_processed_as_the_program_says(program):
    r = fuzz_program(program, 3000, seed=7)
    assert r.frames == 3000 and r.forwarded + r.dropped_by_program + r.target_errors == 3000
    assert set(r.lengths) == {"0", "1-63", "64-1514", "1515-9000"}      # the length range is covered
    if program.name == "basic_router.p4":
        assert r.forwarded > 1000 and r.dropped_by_program > 100        # the seeds reach the routes
    if program.name == "saatp.p4":
        assert r.forwarded > 10 and r.outputs >= r.forwarded           # frames of the configured job


def test_the_checker_catches_a_switch_that_disagrees():
    # the reference routes what has no route to port 5 (the process drops it): the fuzzer
    # must say so
    router = paths.REPO / "p4src" / "basic_router.p4"
    extra = "setdefault ipv4_lpm ipv4_forward(dstAddr:0x080000000555, port:5)"
    with pytest.raises(FuzzFailure, match=r"forwarded \d+ / errors 0, the program says \d+ / 0|emits missing"):
        fuzz_program(router, 3000, seed=11, reference_only_commands=extra)


def test_mutations_stay_within_bounds():
    rng = random.Random(5)
    seed = bytes(range(60))
    lens = [len(mutate(rng, seed)) for _ in range(2000)] + [len(random_frame(rng)) for _ in range(2000)]
    assert min(lens) == 0 and max(lens) <= 9000 and max(lens) > 5000
