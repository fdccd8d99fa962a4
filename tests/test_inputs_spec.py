"""The SPEC grammar: arrays with domains, PRNG keys, static literals, pytrees; bad specs are usage errors."""

from __future__ import annotations

import numpy as np
import pytest

from jaxdiag._core._errors import UsageError
from jaxdiag._loading._inputs import ArgSpec, Static, draw, parse_arg, template_text


@pytest.mark.parametrize("text, value", [
    ("-0.1", -0.1), ("3", 3), ("True", True), ("'mode'", "mode"), ("None", None), ("(0, 1)", None),
])
def test_literals_are_static(text, value):
    template = parse_arg(text)
    if text == "(0, 1)":  # a tuple of literals is a pytree of statics
        assert template == (Static(0), Static(1))
    else:
        assert template == Static(value)


def test_dtype_names_are_static_dtypes():
    assert parse_arg("int32") == Static(np.dtype(np.int32))
    assert parse_arg("f32") == Static(np.dtype(np.float32))


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "int4"])
def test_ml_dtypes_names_are_static_dtypes(name):
    from jaxdiag._loading._inputs import is_literal_text

    assert parse_arg(name) == Static(np.dtype(name)) and is_literal_text(name)


def test_scalar_types_in_a_real_call_are_written_as_dtype_names():
    import jax.numpy as jnp

    from jaxdiag._loading._layout import template_of

    for value, text in ((jnp.float8_e4m3fn, "float8_e4m3fn"), (jnp.float32, "f32"), (np.int8, "i8"),
                        (jnp.bfloat16, "bf16")):
        template = template_of(value)
        assert isinstance(template, Static) and isinstance(template.value, np.dtype)
        assert template_text(template) == text and parse_arg(text) == template


def test_pytrees_keep_their_structure_and_order():
    template = parse_arg('{"w": f32[3,4], "b": f32[4]}')
    assert list(template) == ["w", "b"]
    assert template["w"] == ArgSpec(np.dtype(np.float32), (3, 4))
    assert parse_arg("(f32[3], i32[])") == (ArgSpec(np.dtype(np.float32), (3,)), ArgSpec(np.dtype(np.int32), ()))
    mixed = parse_arg("[f32[2]@negative, 0.5]")
    assert mixed[0].domain == "negative" and mixed[1] == Static(0.5)


@pytest.mark.parametrize("text", ["key[]", "key[4]", "(key[], f32[3])", "{'a': f32[2]@-1..0, 'b': 'mode'}",
                                  "f32[3]@positive", "-0.1", "[f32[2], None]"])
def test_template_text_round_trips(text):
    template = parse_arg(text)
    assert parse_arg(template_text(template)) == template


def test_keys_are_raw_key_data_with_the_key_shape_in_the_text():
    one, four = parse_arg("key[]"), parse_arg("key[4]")
    assert one.key and one.dtype == np.uint32 and str(one) == "key[]" and str(four) == "key[4]"
    assert four.shape[0] == 4 and four.shape[1:] == one.shape
    values = draw(four, np.random.default_rng(0), lead=(5,))
    assert values.shape == (5,) + four.shape and len({v.tobytes() for v in values}) == 5


def test_negative_domain_draws_negative_values():
    values = draw(parse_arg("f32[100]@negative"), np.random.default_rng(0))
    assert (values < 0).all()


@pytest.mark.parametrize("text", ["f32[3", "q99[3]", "key[3]@positive", "{f32[3]: 1}", "foo", "f32[3]@weird", ""])
def test_malformed_specs_are_usage_errors(text):
    with pytest.raises(UsageError, match="bad argument spec"):
        parse_arg(text)
