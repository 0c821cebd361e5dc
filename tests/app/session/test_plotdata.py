"""Labels and units of the results columns the plots offer (app/session/plotdata.py)."""

import pytest

from linkwork.app.session.plotdata import quantity_label, quantity_unit
from linkwork.engine import generators as gen
from linkwork.engine.mechfile import DriverSpec, MotionSpec


@pytest.mark.parametrize("col, unit", [
    ("driver.motor.q", "rad"), ("driver.motor.rate", "rad/s"), ("driver.motor.effort", "N·m"),
    ("driver.motor.power", "W"), ("energy.driver_work", "J"),
])
def test_a_revolute_drivers_columns_carry_their_units(col, unit):
    assert quantity_unit(col, gen.driven_slider_crank()) == unit


def test_a_prismatic_drivers_effort_is_a_force():
    spec = gen.driven_slider_crank()
    spec = spec.with_(drivers=(DriverSpec("push", "guide", MotionSpec("constant-rate", rate=0.1)),))
    assert [quantity_unit(f"driver.push.{f}", spec) for f in ("q", "rate", "effort")] == ["m", "m/s", "N"]
    assert quantity_unit("driver.push.effort") == ""  # without the spec the joint type is unknown
    assert quantity_label("driver.push.effort") == "driver push effort"
