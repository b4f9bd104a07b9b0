"""Exact theory: mass profiles under Binomial / Beta-Binomial pass counts."""

from fadesim.theory.entropy import EntropyDrift, expected_entropy_drift
from fadesim.theory.profile import (
    MassSummary,
    Profile,
    beta_binomial_weights,
    binomial_weights,
    canonical_groups,
    profile,
)

__all__ = ["EntropyDrift", "expected_entropy_drift", "MassSummary", "Profile", "beta_binomial_weights", "binomial_weights", "canonical_groups", "profile"]
