"""group_gemm v29's tile plan (host side, no GPU): every row of every group is covered once, and the plan's
heights, starts and CTA count are what the kernel reads."""
from pathlib import Path

import pytest

from harness.submission import import_submission
from reference.cases import cases

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def v29():
    return import_submission(ROOT / "submissions" / "group_gemm" / "v29.py")


def decode(code):
    """group, first row, rows, block of 128 B rows: the kernel's unpack()."""
    return code & 15, ((code >> 4) & 1023) * 16, (((code >> 14) & 15) + 1) * 16, code >> 18


@pytest.mark.parametrize("shape_set", ["tests", "benchmarks"])
def test_plan_covers_every_row_of_every_group_once(v29, shape_set):
    for case in cases("group_gemm", shape_set):
        sizes = [(m, n, k, 1) for m, n, k in zip(case.args["m"], case.args["n"], case.args["k"])]
        table, ctas, heights = v29.plan(sizes, 132)
        starts, tiles = table[:ctas + 1], table[ctas + 1:]
        assert starts[0] == 0 and starts[-1] == len(tiles) and all(a < b for a, b in zip(starts, starts[1:]))
        seen = {}
        for code in tiles:
            group, m0, rows, block = decode(code)
            m, n, _, _ = sizes[group]
            assert rows == heights[group] <= max(v29.HEIGHTS) and m0 % rows == 0 and m0 < m and block < n // 128
            for r in range(m0, min(m0 + rows, m)):
                seen[group, r, block] = seen.get((group, r, block), 0) + 1
        every = {(g, r, b) for g, (m, n, _, _) in enumerate(sizes) for r in range(m) for b in range(n // 128)}
        assert set(seen) == every and set(seen.values()) == {1}


def test_plan_multiplies_fewer_than_16_padded_rows_per_slice_and_balances(v29):
    """The first benchmark shape: each group's slices pad it by fewer than 16 rows per slice (v28's 128-row tiles
    padded 80 rows to 128), and no CTA has more than the total cost spread evenly plus the costliest tile."""
    m = [80, 176, 128, 72, 64, 248, 96, 160]
    sizes = [(mm, 4096, 7168, 1) for mm in m]
    table, ctas, _ = v29.plan(sizes, 132)
    slices = {(decode(code)[0], decode(code)[1]): decode(code)[2] for code in table[ctas + 1:]}
    for g, mm in enumerate(m):
        heights = [h for (gg, _), h in slices.items() if gg == g]
        assert 0 <= sum(heights) - mm < 16 * len(heights)
    cost = [112 * max(decode(code)[2], 64) for code in table[ctas + 1:]]
    loads = [sum(cost[table[b]:table[b + 1]]) for b in range(ctas)]
    assert max(loads) <= sum(loads) / 132 + max(cost)
