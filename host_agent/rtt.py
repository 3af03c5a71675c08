"""Retransmission timeout from measured round trips (RFC 6298), shared by every agent.

``srtt``/``rttvar`` follow RFC 6298 section 2 (alpha = 1/8, beta = 1/4, first sample R gives
srtt = R, rttvar = R/2); the caller applies Karn's rule (no sample from a retransmitted
packet). A timeout that fired may raise the RTO until the next valid sample (section 5.5's
kept back-off): :meth:`RttEstimator.back_off`.
"""
from __future__ import annotations


class RttEstimator:
    def __init__(self, min_rto: float, max_rto: float):
        if not 0 < min_rto <= max_rto:
            raise ValueError(f"RTO bounds must satisfy 0 < min_rto <= max_rto, got {min_rto}, {max_rto}")
        self.min_rto = min_rto
        self.max_rto = max_rto
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.boost = 0.0       # kept back-off, cleared by the next sample

    def estimate(self) -> float:
        """srtt + 4 rttvar, or the minimum RTO before the first sample."""
        return self.min_rto if self.srtt is None else self.srtt + 4 * self.rttvar

    @property
    def rto(self) -> float:
        return min(self.max_rto, max(self.min_rto, self.estimate(), self.boost))

    def sample(self, r: float) -> None:
        """One round-trip measurement (seconds) of a packet sent once."""
        self.boost = 0.0
        if self.srtt is None:
            self.srtt, self.rttvar = r, r / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - r)
            self.srtt = 0.875 * self.srtt + 0.125 * r

    def back_off(self, rto: float) -> None:
        """Keep at least ``rto`` (capped at the maximum) until the next valid sample."""
        self.boost = min(self.max_rto, rto)
