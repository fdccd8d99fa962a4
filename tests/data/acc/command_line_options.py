"""A library reading its options from the program's command line on first use, as absl's flags do: an option it
does not define is an error (absl: `UnrecognizedFlagError: Unknown command line flag 'keep-going'`). Run by
jaxdiag's CLI, every call into it failed on jaxdiag's own options; `python -c` or a user's script passes only its
own. The rule is right."""

import argparse
import sys

import jax
import jax.numpy as jnp

_parsed: argparse.Namespace | None = None


def _options() -> argparse.Namespace:
    global _parsed
    if _parsed is None:
        parser = argparse.ArgumentParser(add_help=False)
        parser.add_argument("--softplus_beta", type=float, default=1.0)
        known, unknown = parser.parse_known_args(sys.argv[1:])
        if unknown:
            raise ValueError(f"Unknown command line flag {unknown[0]!r}")
        _parsed = known
    return _parsed


@jax.custom_jvp
def softplus(x):
    beta = _options().softplus_beta
    return jnp.logaddexp(beta * x, 0.0) / beta


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), jax.nn.sigmoid(_options().softplus_beta * x) * t
