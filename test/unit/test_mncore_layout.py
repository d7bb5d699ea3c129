"""The MN-Core layout model: notation round trip, placement, checks, pack/unpack."""

from __future__ import annotations

import math

import numpy as np
import pytest
from accel.dialects.mncore_layout import (
    ADDRESS,
    BROADCAST_LEVELS,
    HIERARCHY,
    LONG_WORD_BITS,
    Factor,
    Layout,
    LayoutSyntaxError,
    Placement,
    dtype_bits,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GATHER = "((75_Time:4, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (4_Time:1, 24:16, 4_W:1, 4_PE:1); B@[L1B])"
GEMM_A = "((), (8:3072, 8_L1B:1, 2_Time:1, 2:1536, 16:1), (96:16, 4_W:1, 4_PE:1))"
GEMM_BT = "((25_Time:1, 3:1536, 8_L2B:1, 16_MAB:1, 4:1, 4:4), (96:16, 4_W:1, 4_PE:1); B@[L1B])"
GEMM_C = ("((), (8:96, 8_L1B:1, 2_Time:25, 2:48, 16:1), "
          "(25_Time:1, 3:16, 8_L2B:1, 16_MAB:1, 4_W:1, 4_PE:1))")
#: Seed layouts of MLSDK's docs with their tensor shapes (f16 data) and a memory they fit.
SEEDS = {
    "gather": (GATHER, (151936, 1536), "lm"),
    "gemm_a": (GEMM_A, (1, 4096, 1536), "dram"),
    "gemm_bt": (GEMM_BT, (151936, 1536), "dram"),
    "gemm_c": (GEMM_C, (1, 4096, 151936), "lm"),
}

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- notation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SEEDS))
def test_seed_layouts_print_back_exactly(name: str) -> None:
    text, _, _ = SEEDS[name]
    assert str(Layout.parse(text)) == text


def test_parse_structure() -> None:
    lay = Layout.parse(GATHER)
    assert lay.rank == 2
    assert lay.groups[0][0] == Factor(75, "Time", 4)
    assert lay.groups[0][3] == Factor(4, ADDRESS, 1)
    assert lay.broadcast == ("L1B",)
    assert Layout.parse(GEMM_A).groups[0] == ()


def test_whitespace_is_canonicalised() -> None:
    assert str(Layout.parse(" ( (4_PE:1 ,2:1) ,( 2_W:1 ) ;B@[ L1B ,MAB ] ) ")) == \
        "((4_PE:1, 2:1), (2_W:1); B@[L1B, MAB])"


@pytest.mark.parametrize("text, column, expected", [
    ("", 1, "expected '(' to open the layout, found end of layout"),
    ("(4_PE:1)", 2, "expected '(' to open the group of dimension 0, found '4'"),
    ("((4_PE:1)", 10, "expected ',', ';' or ')' after a dimension group"),
    ("((4_XYZ:1))", 5, "expected a level name after '_' (Time, L2B, L1B, MAB, PE, W), found 'XYZ'"),
    ("((4_PE 1))", 8, "expected ':' and a stride after '4_PE', found '1'"),
    ("((4 1))", 5, "expected ':' and a stride after the factor size, found '1'"),
    ("((4_PE:))", 8, "expected a stride (a non-negative integer), found ')'"),
    ("((x:1))", 3, "expected a factor size (a positive integer), found 'x'"),
    ("((0:1))", 3, "factor size must be at least 1, got 0"),
    ("((4:1) (2:1))", 8, "expected ',', ';' or ')' after a dimension group, found '('"),
    ("((4:1; B@[L1B])", 6, "expected ',' or ')' after a factor, found ';'"),
    ("((4:1); C@[L1B])", 9, "expected 'B@[' to start the broadcast list, found 'C'"),
    ("((4:1); B[L1B])", 10, "expected '@[' after 'B', found '['"),
    ("((4:1); B@[W])", 12, "expected a broadcast level (L2B, L1B, MAB, PE), found 'W'"),
    ("((4:1); B@[L1B, L1B])", 17, "level 'L1B' is broadcast twice"),
    ("((4:1); B@[L1B)", 15, "expected ',' or ']' in the broadcast list, found ')'"),
    ("((4:1)) x", 9, "expected end of layout after its closing ')', found 'x'"),
])
def test_syntax_errors_name_column_and_expectation(text: str, column: int, expected: str) -> None:
    with pytest.raises(LayoutSyntaxError) as info:
        Layout.parse(text)
    assert info.value.column == column
    assert expected in str(info.value)
    assert str(info.value).startswith(f"column {column}: ")


# -- placement --------------------------------------------------------------------------------
def test_place_gather_rows_and_columns() -> None:
    lay = Layout.parse(GATHER)
    # row 151935 = 74*2048 + 1*256 + 7*16 + 3*4 + 3; column 1535 = 3*384 + 23*16 + 3*4 + 3
    assert lay.place((151935, 1535)) == Placement(time=74 * 4 + 3, l2b=1, l1b=0, mab=7, pe=3,
                                                  address=3 + 3 * 4 + 23 * 16, lane=3)
    assert lay.place((0, 1)) == Placement(0, 0, 0, 0, 1, 0, 0)
    assert lay.place((0, 4)) == Placement(0, 0, 0, 0, 0, 0, 1)


def test_place_rejects_indices_outside_the_padded_box() -> None:
    lay = Layout.parse("((4_PE:1, 3:1))")
    assert lay.place((11,)).pe == 3
    with pytest.raises(IndexError):
        lay.place((12,))
    with pytest.raises(IndexError):
        lay.place((0, 0))


# -- checks -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SEEDS))
def test_seed_layouts_are_valid(name: str) -> None:
    text, shape, memory = SEEDS[name]
    report = Layout.parse(text).check(shape, "f16", memory)
    assert report.ok, report.errors


def test_gemm_a_cannot_live_in_lm() -> None:
    report = Layout.parse(GEMM_A).check((1, 4096, 1536), np.float16, "lm")
    assert report.errors == ["addresses span 24576 long words per PE but 'lm' holds 2048"]
    assert not Layout.parse(GEMM_A).check((1, 4096, 1536), "f16", 1 << 15).errors


def test_seed_footprints() -> None:
    gather = Layout.parse(GATHER).footprint((151936, 1536))
    assert (gather.time_steps, gather.words_per_pe, gather.replication) == (300, 384, 8)
    assert gather.pes == 4096
    assert gather.padding == (153600 - 151936, 0)
    assert gather.padding_elements == (153600 - 151936) * 1536
    gemm_a = Layout.parse(GEMM_A).footprint((1, 4096, 1536))
    assert (gemm_a.time_steps, gemm_a.words_per_pe, gemm_a.pes) == (2, 24576, 32)
    assert gemm_a.padding_elements == 0
    gemm_c = Layout.parse(GEMM_C).footprint((1, 4096, 151936))
    assert (gemm_c.time_steps, gemm_c.words_per_pe, gemm_c.lanes_used) == (50, 768, 4)


@pytest.mark.parametrize("text, shape, dtype, memory, error", [
    ("((4_PE:1))", (4, 2), "f32", None, "layout has 1 dimension groups but the tensor has rank 2"),
    ("((4_PE:1))", (5,), "f32", None, "dimension 0 has size 5 but its group covers only 4"),
    ("((16_L2B:1))", (16,), "f32", None, "L2B spans 16 positions but MN-Core 2 has 8"),
    ("((2_MAB:16))", (2,), "f32", None, "MAB spans 17 positions but MN-Core 2 has 16"),
    ("((4_W:1))", (4,), "f32", None, "W spans 4 lanes but a 64-bit long word holds 2 32-bit"),
    ("((2_W:1))", (2,), "f64", None, "W spans 2 lanes but a 64-bit long word holds 1 64-bit"),
    ("((4:1))", (4,), 128, None, "128-bit elements do not pack into 64-bit long words"),
    ("((8_L1B:1); B@[L1B])", (8,), "f32", None, "L1B is broadcast (B@[L1B]) and also used"),
    ("((4:1), (4:2))", (4, 4), "f32", None, "the address factors (4:1, 4:2) map different"),
    ("((3_Time:0))", (3,), "f32", None, "the Time factors (3_Time:0) map different"),
    ("((4096:1))", (4096,), "f32", "lm", "addresses span 4096 long words per PE but 'lm' holds"),
    ("((4:1))", (4,), "f32", "hbm", "unknown memory 'hbm' (known: lm, dram)"),
])
def test_check_errors(text: str, shape: tuple[int, ...], dtype: object, memory: str | None,
                      error: str) -> None:
    report = Layout.parse(text).check(shape, dtype, memory)
    assert not report.ok
    assert any(error in e for e in report.errors), report.errors
    assert report.footprint is None


def test_unused_lanes_are_a_warning_not_an_error() -> None:
    report = Layout.parse("((4_PE:1, 2_W:1))").check((8,), "f16")
    assert report.ok
    assert report.warnings == ["long words hold 4 16-bit lanes but the layout uses 2"]


def test_dtype_bits() -> None:
    assert [dtype_bits(d) for d in ("f16", "bf16", "f32", "i8", np.float64, 16)] == \
        [16, 16, 32, 8, 64, 16]


# -- pack / unpack ----------------------------------------------------------------------------
def test_pack_places_every_element_where_place_says() -> None:
    lay = Layout.parse("((2_Time:1, 4_PE:1, 3:1), (2_W:1, 5:3); B@[MAB])")
    array = np.arange(1, 20 * 9 + 1, dtype=np.int32).reshape(20, 9)
    image = lay.pack(array)
    assert image.shape == lay.image_shape() == (2, 1, 1, 16, 4, 15, 2)
    for index in np.ndindex(*array.shape):
        p = lay.place(index)
        for mab in range(HIERARCHY["MAB"]):  # every replica holds the element
            assert image[p.time, p.l2b, p.l1b, mab, p.pe, p.address, p.lane] == array[index]
    # padding slots (4 rows, 1 column) hold the fill value
    assert np.count_nonzero(image) == array.size * HIERARCHY["MAB"]
    np.testing.assert_array_equal(lay.unpack(image, array.shape), array)


def test_pack_rejects_tensors_the_layout_does_not_cover() -> None:
    lay = Layout.parse("((4_PE:1))")
    with pytest.raises(ValueError, match="dimension 0 has size 5"):
        lay.pack(np.zeros(5))
    with pytest.raises(ValueError, match="image has shape"):
        lay.unpack(np.zeros((1, 1, 1, 1, 3, 1, 1)), (4,))


def test_pack_rank_zero() -> None:
    lay = Layout.parse("()")
    image = lay.pack(np.array(7.5))
    assert image.shape == (1,) * 7
    assert lay.unpack(image, ()) == 7.5


# -- property tests ---------------------------------------------------------------------------
_LIMITS = {**HIERARCHY, "Time": None, ADDRESS: None}
_IMAGE_LIMIT = 50_000


@st.composite
def layouts_and_shapes(draw: st.DrawFn) -> tuple[Layout, tuple[int, ...], int]:
    """A valid layout (dense or gapped strides, padding, broadcast), a shape it covers, and
    the element width."""
    bits = draw(st.sampled_from([8, 16, 32, 64]))
    limits = {**_LIMITS, "W": LONG_WORD_BITS // bits}
    rank = draw(st.integers(0, 3))
    raw = [draw(st.lists(st.tuples(st.integers(1, 4), st.sampled_from(list(limits))),
                         max_size=3)) for _ in range(rank)]
    # Keep bounded levels within the hierarchy: an overflowing factor becomes an address one.
    used: dict[str, int] = {}
    groups: list[list[list]] = []
    for factors in raw:
        group = []
        for size, level in factors:
            limit = limits[level]
            if limit is not None and used.get(level, 1) * size > limit:
                level = ADDRESS
            used[level] = used.get(level, 1) * size
            group.append([size, level, 0])
        groups.append(group)
    # Strides: per level, factors in a random order, each stride past everything before it.
    for level in used:
        slots = [f for g in groups for f in g if f[1] == level]
        reach = 1
        for f in draw(st.permutations(slots)):
            if f[0] == 1:
                f[2] = draw(st.integers(0, 3))  # a size-1 factor's stride never matters
                continue
            gap = draw(st.integers(0, 2)) if limits[level] is None else 0
            f[2] = reach + gap
            reach = f[2] * f[0]
    layout = Layout(tuple(tuple(Factor(*f) for f in g) for g in groups))
    free = [b for b in BROADCAST_LEVELS if not layout.factors(b)]
    broadcast = draw(st.lists(st.sampled_from(free), unique=True, max_size=2)) if free else []
    while broadcast and math.prod(Layout(layout.groups, tuple(broadcast)).image_shape()) > \
            _IMAGE_LIMIT:
        broadcast.pop()
    layout = Layout(layout.groups, tuple(broadcast))
    shape = tuple(draw(st.integers(1, n)) for n in layout.padded_shape)
    return layout, shape, bits


@FAST
@given(layouts_and_shapes())
def test_random_valid_layouts_round_trip(case: tuple[Layout, tuple[int, ...], int]) -> None:
    layout, shape, bits = case
    assert Layout.parse(str(layout)) == layout
    report = layout.check(shape, bits, "dram")
    assert report.ok, (str(layout), shape, report.errors)
    assert report.footprint is not None
    assert report.footprint.padding_elements == math.prod(layout.padded_shape) - math.prod(shape)


@FAST
@given(layouts_and_shapes(), st.randoms(use_true_random=False))
def test_pack_unpack_restores_random_tensors(case: tuple[Layout, tuple[int, ...], int],
                                             rng: object) -> None:
    layout, shape, _ = case
    gen = np.random.default_rng(rng.getrandbits(32))  # type: ignore[attr-defined]
    array = gen.integers(1, 1 << 30, size=shape, dtype=np.int64)
    image = layout.pack(array)
    np.testing.assert_array_equal(layout.unpack(image, shape), array)
    # no element overwrote another: every element sits once per replica, the rest is fill
    replicas = math.prod(HIERARCHY[b] for b in layout.broadcast)
    assert np.count_nonzero(image) == array.size * replicas
    if array.size:
        index = tuple(int(gen.integers(0, n)) for n in shape)
        assert image[tuple(layout.place(index))] == array[index]


@FAST
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 6)), min_size=1, max_size=4))
def test_collision_check_matches_brute_force(factors: list[tuple[int, int]]) -> None:
    layout = Layout((tuple(Factor(n, ADDRESS, s) for n, s in factors),))
    sums = [0]
    for n, s in factors:
        sums = [x + d * s for x in sums for d in range(n)]
    collides = len(set(sums)) < len(sums)
    errors = layout.check((1,), "f32").errors
    assert any("share a slot" in e for e in errors) == collides
