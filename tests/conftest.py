import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "fadesim", deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fadesim"))
