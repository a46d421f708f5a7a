"""retry_loop's SQL cycle finder gives exactly the reference (pure Python) answer."""

from __future__ import annotations

import random

import duckdb

from agenttrail.detect.retry_loop import find_cycle, find_cycle_sql
from agenttrail.store import Store


def test_sql_cycle_finder_matches_the_reference_on_random_sequences() -> None:
    rng = random.Random(5)
    store = Store(con=duckdb.connect())
    store.con.execute("CREATE TEMP TABLE _rl_calls (bundle_id INTEGER, i BIGINT, id VARCHAR)")
    cases = 0
    for trial in range(80):
        alphabet = "abcd"[: rng.randint(1, 4)]
        ids = [rng.choice(alphabet) for _ in range(rng.randint(0, 40))]
        if trial % 3 == 0:  # plant a loop
            period = rng.randint(1, 4)
            unit = [f"u{x}" for x in range(period)]
            at = rng.randint(0, len(ids))
            ids[at:at] = unit * rng.randint(2, 6)
        store.con.execute("DELETE FROM _rl_calls")
        if ids:
            store.con.executemany("INSERT INTO _rl_calls VALUES (1, ?, ?)", list(enumerate(ids)))
        for max_period, min_it in ((6, 3), (3, 2), (1, 4)):
            expected = find_cycle(ids, max_period, min_it)
            assert find_cycle_sql(store, 1, max_period, min_it) == expected, (ids, max_period, min_it)
            cases += expected is not None
    assert cases > 30  # the planted loops were found
    assert find_cycle(list("xabcabcabcy"), 6, 3) == (1, 10, 3)
