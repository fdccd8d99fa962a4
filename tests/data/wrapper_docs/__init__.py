"""A package whose custom rules sit in an undocumented submodule and whose documented entry points forward to them
by name: the documentation that states the rules' contract (a symmetric positive-definite matrix, the shapes of a
constrained problem) is the wrapper's."""

from .api import (constrained_minimum, penalised_minimum, ridge_solve, ridge_solve_material, spd_solve,
                  spd_solve_wrong)

__all__ = ["constrained_minimum", "penalised_minimum", "ridge_solve", "ridge_solve_material", "spd_solve",
           "spd_solve_wrong"]
