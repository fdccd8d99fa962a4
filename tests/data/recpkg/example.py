"""The library's own example: `jaxdiag record -- python -m recpkg.example` records its calls."""
import jax
import jax.numpy as jnp

from recpkg import ops


def main():
    x = -jnp.linspace(0.5, 2.0, 4)
    print(ops.pad(x, 2))
    print(ops.neg_log_sum(x), jax.grad(ops.neg_log_sum)(x))
    params = {"w": jnp.ones((3, 4)) * 0.1, "b": jnp.zeros(3)}
    print(ops.dense(params, jnp.ones(4)))
    print(jax.grad(lambda v: ops.clip_gradient(-0.1, 0.1, v).sum())(jnp.arange(3.0)))


if __name__ == "__main__":
    main()
