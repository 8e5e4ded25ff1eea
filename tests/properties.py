"""Example counts of the property tests: the CI profile's, and many more under `make test-explore`."""

from __future__ import annotations

from hypothesis import settings

EXPLORE_FACTOR = 20


def examples(n: int) -> settings:
    """`n` examples (the CI count: enough to have found the bugs found so far), EXPLORE_FACTOR × n when
    exploring. Read at import, after pytest has loaded the profile."""
    factor = EXPLORE_FACTOR if settings.get_current_profile_name() == "explore" else 1
    return settings(max_examples=n * factor, deadline=None)
