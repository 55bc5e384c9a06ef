"""The issue's worked examples, reproduced exactly: demand, installed range, reserves, gang minimum, nodes."""

from __future__ import annotations

from fractions import Fraction

from gpufleet.sizing.arithmetic import gang_minimum, installed_equivalents, nodes_for, scenarios
from tests.sizing.helpers import wclass, wfile


def test_demand_is_runs_times_gpus_times_hours() -> None:
    assert wclass(runs_per_period=40, gpus_per_run=4, hours_per_run=6).gpu_hours() == 960


def test_installed_equivalents_for_960_gpu_hours_over_120_hours_per_device() -> None:
    at = {u: installed_equivalents(Fraction(960), Fraction(120), Fraction(u)) for u in (50, 60, 70)}
    assert at[60] == Fraction(40, 3)
    assert f"{float(at[60]):.2f}" == "13.33"
    assert at[50] == 16
    assert f"{float(at[70]):.2f}" == "11.43"


def test_scenarios_round_up_and_run_from_most_to_fewest_gpus() -> None:
    got = scenarios(Fraction(960), wfile().planning)
    assert [s.utilisation_pct for s in got] == [50, 60, 70]
    assert [s.equivalents_rounded for s in got] == [16, 14, 12]
    assert [s.rounded for s in got] == [16, 14, 12]  # no reserves configured: nothing added


def test_reserves_are_added_separately_and_never_change_the_equivalent() -> None:
    plain = scenarios(Fraction(960), wfile().planning)[1]
    reserved = scenarios(Fraction(960), wfile(failure_reserve_pct=5, maintenance_pct=3, growth_pct=10).planning)[1]
    assert reserved.equivalents == plain.equivalents == Fraction(40, 3)
    assert reserved.failure_reserve == Fraction(40, 3) * Fraction(5, 100)
    assert reserved.maintenance == Fraction(40, 3) * Fraction(3, 100)
    assert reserved.growth == Fraction(40, 3) * Fraction(10, 100)
    assert reserved.total == Fraction(40, 3) * Fraction(118, 100)
    assert reserved.rounded == 16  # 15.73 rounds up


def test_two_four_gpu_jobs_that_start_together_need_eight_compatible_gpus() -> None:
    gang = wclass(name="pair", gang=True, runs_started_together=2, gpus_per_run=4)
    solo = wclass(name="solo", gpus_per_run=6)  # not a gang: adds no all-at-once constraint
    assert gang_minimum([gang, solo]) == (8, "pair")


def test_gpus_round_up_to_whole_nodes() -> None:
    assert nodes_for(14, 8) == 2
    assert nodes_for(16, 8) == 2
    assert nodes_for(17, 8) == 3
