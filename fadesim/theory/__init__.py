"""Exact theory: mass profiles under Binomial / Beta-Binomial pass counts; first- and second-order drift."""

from fadesim.theory.second_order import DRIFT_QUANTITIES, Drift, DriftTerms, drift, per_prompt_step
from fadesim.theory.entropy import EntropyDrift, expected_entropy_drift
from fadesim.theory.mass_profile import (
    MassSummary,
    Profile,
    beta_binomial_weights,
    binomial_weights,
    canonical_groups,
    profile,
)

__all__ = ["DRIFT_QUANTITIES", "Drift", "DriftTerms", "drift", "per_prompt_step", "EntropyDrift", "expected_entropy_drift", "MassSummary", "Profile", "beta_binomial_weights", "binomial_weights", "canonical_groups", "profile"]
