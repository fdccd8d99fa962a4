"""Seed 1, the published "fixed" code (verbatim apart from comments). Still wrong on current JAX:
- the summed output always has its batch axis at 0, but the rule returns the input's bd_x (in_axes=1 crashes
  with IndexError inside JAX);
- my_sum returns a list (multiple_results), so vmap(my_sum, out_axes=(0, None)) is not a tree prefix;
- no abstract eval and no lowering, so jax.jit(my_sum) fails."""

import jax
import jax.numpy as jnp
from jax.extend import core
from jax.interpreters import batching

my_sum_p = core.Primitive('my_sum')  # jaxdiag-expect: JXR002, JXR004
my_sum_p.multiple_results = True


def my_sum(x):
    return my_sum_p.bind(x)  # jaxdiag-expect: JXB011


# 原语求值规则保持不变
def my_sum_impl(x):
    return jnp.sum(x), jnp.ones((3,))


my_sum_p.def_impl(my_sum_impl)


# 修正后的批处理规则
def my_sum_batching_rule(batched_args, batch_dims):
    x, = batched_args
    bd_x, = batch_dims

    # 处理第一个输出：对输入除batch轴外的所有轴求和，保留batch轴
    axis = tuple(i for i in range(x.ndim) if i != bd_x)
    sum_output = jnp.sum(x, axis=axis)

    # 处理第二个输出：返回原常量，不依赖输入batch维度
    ones_output = jnp.ones((3,))

    # 标记输出的batch维度：第一个输出对应输入的batch轴，第二个输出无batch轴
    return (sum_output, ones_output), (bd_x, None)  # jaxdiag-expect: JXB001


batching.primitive_batchers[my_sum_p] = my_sum_batching_rule

if __name__ == "__main__":
    x = jnp.array([[1.0, 2.0, 3.0],
                   [4.0, 5.0, 6.0]])
    print('my_sum 默认vmap:', jax.vmap(my_sum)(x))
    print('my_sum 自定义out_axes:', jax.vmap(my_sum, out_axes=(0, None))(x))
