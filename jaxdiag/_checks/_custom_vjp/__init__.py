"""custom_vjp checks: fwd (JXG012), bwd structure and dtypes (JXG010, JXG004), per-output cotangent probing
(JXG011 ignored cotangent, JXG013 swapped, JXG018 dropped argument, JXG014 numerical mismatch), nondiff_argnums
(JXG015), rules that raise (JXG017), symbolic zeros (JXG006) and bwd linear in the cotangent (JXG036).

fwd and bwd are called directly, exactly as JAX calls them (`fwd(*args)`, `bwd(*nondiff_args, res, ct)`), so a
defect is found and explained before JAX's own, often confusing, error; composition under jit/vmap is checked in
`_grad.py`.

Modules: `_fwd_bwd.py` (fwd, bwd structure), `_linearity.py` (bwd at a zero cotangent), `_cotangents.py`
(cotangent probing), `_nondiff.py`.
"""

from __future__ import annotations

from ._cotangents import vjp_cotangents
from ._fwd_bwd import vjp_bwd_structure, vjp_fwd
from ._linearity import vjp_linearity
from ._nondiff import nondiff_arrays

__all__ = ["CHECKS"]

CHECKS = [vjp_fwd, vjp_bwd_structure, vjp_linearity, vjp_cotangents, nondiff_arrays]
