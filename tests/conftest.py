import pathlib
import sys

from hypothesis import HealthCheck, settings

sys.path.insert(0, str(pathlib.Path(__file__).parent))

# CI machines are small and shared (2 cores, pytest-xdist on both): timing-based
# hypothesis checks would make the suite flaky without finding anything.
settings.register_profile("crashpoint", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("crashpoint")
