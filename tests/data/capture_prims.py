"""A program-capture primitive, written as a quantum library captures its measurements: its abstract eval returns
an abstract value type of the library's own (not a ShapedArray), and only the library's interpreter evaluates it.
JAX never lowers, batches or differentiates it, so no array check applies (before: JXR003, JXR004, JXR005). So is
`measure_p`, whose abstract eval is a plain ShapedArray but whose impl returns the library's own object."""

import jax
from jax.extend.core import Primitive


class AbstractMeasurement(jax.core.AbstractValue):
    """What a captured measurement is, for the library's interpreter."""

    def __init__(self, n_wires: int) -> None:
        self.n_wires = n_wires

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractMeasurement) and other.n_wires == self.n_wires

    def __hash__(self) -> int:
        return hash(("AbstractMeasurement", self.n_wires))


expval_p = Primitive("expval_capture")


@expval_p.def_impl
def _expval_impl(x):
    return x  # the interpreter replaces this; eagerly it stands for the measured observable


@expval_p.def_abstract_eval
def _expval_abstract(x):
    return AbstractMeasurement(n_wires=1)


wires_p = Primitive("wires_capture")


@wires_p.def_impl
def _wires_impl(*wires, n_wires):
    return wires[0]


@wires_p.def_abstract_eval
def _wires_abstract(*wires, n_wires):  # a required bind param no call site gives: jaxdiag assumes values for it
    return AbstractMeasurement(n_wires=n_wires)


class MeasurementValue:
    """A mid-circuit measurement's outcome, as the library's interpreter handles it (not an array)."""

    def __init__(self, wire: object) -> None:
        self.wire = wire


measure_p = Primitive("measure_capture")


@measure_p.def_impl
def _measure_impl(wire):
    return MeasurementValue(wire)  # eagerly, the library's own object; its interpreter gives it a value


@measure_p.def_abstract_eval
def _measure_abstract(wire):
    return jax.core.ShapedArray((), jax.numpy.bool_)  # what the outcome is once measured, inside a capture
