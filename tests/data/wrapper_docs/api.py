"""The package's documented entry points: each forwards its arguments, by name, to a rule of `_kernels`."""

from . import _kernels


def spd_solve(A, b):
    """The solution of ``A x = b``.

    Args:
        A: ``(n, n)`` symmetric positive-definite matrix.
        b: ``(n,)`` right-hand side.
    """
    return _kernels.spd_solve(A, b)


def spd_solve_wrong(A, b):
    """The solution of ``A x = b``.

    Args:
        A: ``(n, n)`` symmetric positive-definite matrix.
        b: ``(n,)`` right-hand side.
    """
    return _kernels.spd_solve_wrong(A, b)


def ridge_solve(A, b, ridge):
    """The solution of ``(A + 1e-4 ridge I) x = b``.

    Args:
        A: ``(n, n)`` symmetric positive-definite matrix.
        b: ``(n,)`` right-hand side.
        ridge: the regularisation's weight.
    """
    return _kernels.ridge_solve(A, b, ridge)


def ridge_solve_material(A, b, ridge):
    """The solution of ``(A + ridge I) x = b``.

    Args:
        A: ``(n, n)`` symmetric positive-definite matrix.
        b: ``(n,)`` right-hand side.
        ridge: the regularisation's weight.
    """
    return _kernels.ridge_solve_material(A, b, ridge)


def constrained_minimum(Q, q, A, b):
    """The minimiser of ``x^T Q x / 2 + q^T x`` subject to ``A x = b``.

    Args:
        Q: ``(n, n)`` PSD cost matrix.
        q: ``(n,)`` linear cost.
        A: ``(m, n)`` equality constraint matrix.
        b: ``(m,)`` equality constraint right-hand side.
    """
    return _kernels.constrained_minimum(Q, q, A, b)


def penalised_minimum(Q, q, A, b, penalty):
    """The constrained minimiser, scaled by the penalty's inverse square root.

    Args:
        Q: ``(n, n)`` PSD cost matrix.
        q: ``(n,)`` linear cost.
        A: ``(m, n)`` equality constraint matrix.
        b: ``(m,)`` equality constraint right-hand side.
        penalty: the weight of the constraints.
    """
    return _kernels.penalised_minimum(Q, q, A, b, penalty)
