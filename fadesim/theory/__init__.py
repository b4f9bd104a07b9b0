"""Exact theory: mass profiles under Binomial / Beta-Binomial pass counts."""

from fadesim.theory.profile import (
    MassSummary,
    Profile,
    beta_binomial_weights,
    binomial_weights,
    canonical_groups,
    profile,
)

__all__ = ["MassSummary", "Profile", "beta_binomial_weights", "binomial_weights", "canonical_groups", "profile"]
