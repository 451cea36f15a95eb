"""group_gemm v29's and v31's tile plans (host side, no GPU): every row of every group is covered once (v31: every
K step of it once, across a cut tile's two halves), and the plan's heights, starts, CTA count and split codes are
what the kernel reads: each tile code is read back by the kernel's own unpack(), taken from its CUDA source."""
import re
from pathlib import Path

import pytest

from harness.submission import import_submission
from reference.cases import cases

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def v29():
    return import_submission(ROOT / "submissions" / "group_gemm" / "v29.py")


@pytest.fixture(scope="module")
def v31():
    return import_submission(ROOT / "submissions" / "group_gemm" / "v31.py")


def sizes_of(case):
    """The (m, n, k, l) of each group of a contest case, as custom_kernel receives them."""
    return [(m, n, k, 1) for m, n, k in zip(case.args["m"], case.args["n"], case.args["k"])]


def kernel_unpack(version: str):
    """The unpack() of a version's CUDA source, evaluated on a tile code as (group, first row, rows, block of B): its
    constants and its expression are read from the source (C's &, >>, + and * mean what Python's do on these
    non-negative ints), so that the plan is checked against what the kernel reads, not against a copy of it."""
    source = (ROOT / "submissions" / "group_gemm" / f"{version}.py").read_text()
    names = {}
    for name, value in re.findall(r"constexpr int (\w+) = ([^;]+);", source):
        try:
            names[name] = eval(value, {}, dict(names))  # noqa: S307 - the repository's own source
        except (NameError, SyntaxError, TypeError):
            continue  # a constant made of things other than integer constants
    fields = re.search(r"Tile unpack\(int code\) \{\s*return Tile\{(.*?)\};", source, re.DOTALL).group(1)
    expression = compile(f"({fields})", f"{version} unpack()", "eval")
    casts = {"int": int, "unsigned": lambda value: value & 0xFFFFFFFF}

    def unpack(code):
        group, first_row, rows, first_column = eval(expression, casts, {**names, "code": code})  # noqa: S307
        return group, first_row, rows, first_column // names["BN"]
    return unpack


UNPACK = {version: kernel_unpack(version) for version in ("v29", "v31")}


@pytest.mark.parametrize("shape_set", ["tests", "benchmarks"])
def test_plan_covers_every_row_of_every_group_once(v29, shape_set):
    for case in cases("group_gemm", shape_set):
        sizes = sizes_of(case)
        table, ctas, heights = v29.plan(sizes, 132)
        starts, tiles = table[:ctas + 1], table[ctas + 1:]
        assert starts[0] == 0 and starts[-1] == len(tiles) and all(a < b for a, b in zip(starts, starts[1:]))
        seen = {}
        for code in tiles:
            group, m0, rows, block = UNPACK["v29"](code)
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
    unpack = UNPACK["v29"]
    slices = {(unpack(code)[0], unpack(code)[1]): unpack(code)[2] for code in table[ctas + 1:]}
    for g, mm in enumerate(m):
        heights = [h for (gg, _), h in slices.items() if gg == g]
        assert 0 <= sum(heights) - mm < 16 * len(heights)
    cost = [7168 // 64 * max(unpack(code)[2], v29.FLOOR_ROWS) for code in table[ctas + 1:]]
    loads = [sum(cost[table[b]:table[b + 1]]) for b in range(ctas)]
    assert max(loads) <= sum(loads) / 132 + max(cost)


@pytest.mark.parametrize("m, height, tiles", [(8, 16, 2), (240, 128, 4), (241, 128, 4), (16368, 128, 256)])
def test_plan_of_a_single_group_at_the_height_limits(v29, m, height, tiles):
    """Fewer than 16 rows make one 16-row slice; a lone group of 240 rows (two blocks of B) is cut in two, since two
    128-row slices finish sooner on four CTAs than one 240-row slice on two; the tallest group the tile code allows
    is cut into 128-row slices for 132 CTAs."""
    table, ctas, heights = v29.plan([(m, 256, 256, 1)], 132)
    assert heights == [height] and table[ctas] == len(table) - ctas - 1 == tiles and ctas == min(tiles, 132)


def test_plan_splits_groups_that_tie_for_the_longest_cta(v29):
    """Eight equal groups of 240 rows and one block of B each: splitting any one alone leaves the longest CTA as long,
    but the plan still splits them all, so 16 CTAs work instead of 8."""
    table, ctas, heights = v29.plan([(240, 128, 1024, 1)] * 8, 132)
    assert ctas == 16 and heights == [128] * 8


@pytest.mark.parametrize("sizes", [[(0, 128, 256, 1)], [(16, (1 << 20) + 128, 256, 1)], [(16, 128, 192, 1)],
                                   [(16384, 128, 256, 1)], [(16368, 128, 1 << 21, 1)]])
def test_sizes_the_kernel_cannot_address_are_refused_before_any_device_work(v29, sizes):
    with pytest.raises(ValueError, match="group_gemm v29 needs"):
        v29._prepare(sizes, "cpu")


def k_range(split, steps):
    """The 128-wide K steps a v31 tile covers under its split code: the kernel's k_first() and k_stages()."""
    if split == 0:
        return 0, steps
    return (steps // 2, steps) if (split - 1) & 1 else (0, steps // 2)


def check_v31_plan(sizes, table, ctas, slots):
    """Every (group, row, block of B) gets each K step exactly once; in each CTA the second halves come first and the
    first halves last; the slots are 0 .. slots - 1, each with one first and one second half of the same tile."""
    starts = table[:ctas + 1]
    count = starts[-1]
    codes, splits = table[ctas + 1:ctas + 1 + count], table[ctas + 1 + count:]
    assert len(splits) == count and starts[0] == 0 and all(a < b for a, b in zip(starts, starts[1:]))
    covered = {}
    for code, split in zip(codes, splits):
        group, m0, rows, block = UNPACK["v31"](code)
        m, _, k, _ = sizes[group]
        lo, hi = k_range(split, k // 128)
        for r in range(m0, min(m0 + rows, m)):
            covered.setdefault((group, r, block), []).append((lo, hi))
    for (group, _, _), ranges in covered.items():
        ranges.sort()
        assert ranges[0][0] == 0 and ranges[-1][1] == sizes[group][2] // 128
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    every = {(g, r, b) for g, (m, n, _, _) in enumerate(sizes) for r in range(m) for b in range(n // 128)}
    assert set(covered) == every
    for b in range(ctas):
        rank = [0 if s and (s - 1) & 1 else 2 if s else 1 for s in splits[starts[b]:starts[b + 1]]]
        assert rank == sorted(rank)
    halves = {}
    for code, split in zip(codes, splits):
        if split:
            halves.setdefault((split - 1) >> 1, []).append(((split - 1) & 1, code))
    assert sorted(halves) == list(range(slots))
    assert all(sorted(h for h, _ in pair) == [0, 1] and pair[0][1] == pair[1][1] for pair in halves.values())


@pytest.mark.parametrize("shape_set", ["tests", "benchmarks"])
def test_v31_plan_covers_every_k_step_once_with_writers_first_and_heads_last(v31, shape_set):
    for case in cases("group_gemm", shape_set):
        sizes = sizes_of(case)
        table, ctas, _, slots = v31.plan(sizes, 132)
        check_v31_plan(sizes, table, ctas, slots)


def test_v31_cuts_tiles_only_where_the_longest_cta_gets_shorter(v29, v31):
    """The first benchmark shape's longest CTA gets shorter by cutting tiles; the second's plan, balanced to 1.04x of
    the mean already, cuts none and is v30's (v29's) plan."""
    for m, n, k, cut in [([80, 176, 128, 72, 64, 248, 96, 160], 4096, 7168, True),
                         ([40, 76, 168, 72, 164, 148, 196, 160], 7168, 2048, False)]:
        sizes = [(mm, n, k, 1) for mm in m]
        table, ctas, heights, slots = v31.plan(sizes, 132)
        assert (slots > 0) == cut
        if not cut:
            assert (table[:-table[ctas]], ctas, heights) == v29.plan(sizes, 132)


def test_v31_plan_with_a_free_fixup_cuts_test_shapes_and_stays_consistent(v31, monkeypatch):
    """With the fixup costed at nothing (as a scratch copy tested on the device did) the small test shapes get cut
    tiles, on several CTAs, and with a negative cost every half lands on one CTA; both plans stay consistent."""
    for fix, one_cta in [(0, False), (-64, True)]:
        monkeypatch.setattr(v31, "FIX_STEPS", fix)
        for case in cases("group_gemm", "tests"):
            sizes = sizes_of(case)
            table, ctas, _, slots = v31.plan(sizes, 132)
            assert slots > 0 and (ctas == 1) == one_cta
            check_v31_plan(sizes, table, ctas, slots)
