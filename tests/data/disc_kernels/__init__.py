"""A library whose primitives live inside kernel objects (`foo_p = Kernel(...)` keeps the Primitive in
`foo_p.primitive`), whose impl and abstract eval are shared methods of the kernel class, and whose kernels need a
bind param (`order`) that only the library's own call sites pass."""

from . import ops  # noqa: F401
