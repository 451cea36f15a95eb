"""check_implementation: the contest rule, and reports that say what is wrong and where."""
import torch

from reference import get_task


def gemm_case():
    mod = get_task("gemm")
    data = mod.generate_input(m=128, n=64, k=128, l=1, seed=9)
    return mod, data, mod.ref_kernel(data)


def test_exact_output_passes_and_tolerance_edge():
    mod, data, ref = gemm_case()
    assert mod.check_implementation(data, ref.clone()) == (True, "")
    nudged = ref.clone()
    nudged[0, 0, 0] = ref[0, 0, 0] + (1e-3 + 1e-3 * ref[0, 0, 0].abs()) * 0.5
    assert mod.check(data, nudged).ok


def test_wrong_values_are_named_by_index_with_count_and_max_error():
    mod, data, ref = gemm_case()
    bad = ref.clone()
    bad[3, 7, 0] += 5
    bad[100, 1, 0] -= 9
    report = mod.check(data, bad)
    assert not report.ok and report.mismatches == 2
    assert report.first[0][0] == (3, 7, 0) and report.first[1][0] == (100, 1, 0)
    assert abs(report.max_abs_error - 9) < 0.1
    assert "(3, 7, 0)" in report.message and "2 of" in report.message


def test_the_largest_error_reported_is_a_mismatchs_not_a_tolerated_one():
    """A large output off by 1.0 is within 0.001 + 0.001 * 2000; a small one off by 0.0013 is not: the message gives
    the mismatch's 0.0013, not the 1.0 (an H200 report read 'max |out - ref| = 1' for one mismatch of 0.0013)."""
    from reference.checker import compare
    expected = torch.tensor([2000.0, -0.098876953125, 0.5], dtype=torch.float16)
    received = torch.tensor([2001.0, -0.09759521484375, 0.5], dtype=torch.float16)
    report = compare(received, expected)
    assert not report.ok and report.mismatches == 1
    assert abs(report.max_abs_error - 0.00128) < 1e-4, report.max_abs_error
    assert "largest |out - ref| among them = 0.00128" in report.message


def test_nan_inf_shape_dtype_and_type():
    mod, data, ref = gemm_case()
    nan = ref.clone()
    nan[1, 1, 0] = float("nan")
    assert not mod.check(data, nan).ok
    inf = ref.clone()
    inf[2, 2, 0] = float("inf")
    assert not mod.check(data, inf).ok
    assert "shape" in mod.check(data, ref[:, :32]).message
    assert "dtype" in mod.check(data, ref.float()).message
    ok, message = mod.check_implementation(data, None)
    assert not ok and "torch.Tensor" in message


def test_group_gemm_counts_outputs_and_checks_each():
    mod = get_task("group_gemm")
    data = mod.generate_input(m=(40, 64), n=(32, 16), k=(64, 64), g=2, seed=2)
    ref = mod.ref_kernel(data)
    assert mod.check(data, [r.clone() for r in ref]).ok
    assert "expected 2 outputs" in mod.check(data, ref[:1]).message
    wrong = [ref[0].clone(), ref[1].clone()]
    wrong[1][5, 3, 0] += 10
    report = mod.check(data, wrong)
    assert not report.ok and "group 1" in report.message and report.first[0][0] == (5, 3, 0)
    assert "list" in mod.check(data, ref[0]).message


def test_all_agree_answers_for_many_pairs_at_once_what_compare_answers_for_each():
    from reference.checker import all_agree, compare
    _, _, ref = gemm_case()
    edge = ref.clone()
    edge[0, 0, 0] += (1e-3 + 1e-3 * ref[0, 0, 0].abs()) * 0.5
    nan, off = ref.clone(), ref.clone()
    nan[1, 1, 0] = float("nan")
    off[3, 7, 0] += 5
    for received in (ref.clone(), edge, nan, off, ref.float(), ref[:, :32], None):
        assert all_agree([(ref.clone(), ref), (received, ref)]) == compare(received, ref).ok
    narrow = ref[:, :32].contiguous()  # pairs of other shapes, as group GEMM's groups: compared side by side
    assert all_agree([(ref.clone(), ref), (narrow.clone(), narrow)])
    assert not all_agree([(ref.clone(), ref), (off[:, :32], narrow)])
    assert all_agree([])
