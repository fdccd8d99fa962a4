"""A small third-party "library" for the --format issue tests: installed nowhere, put on sys.path by the test."""

from .ops import norm_p, scaled_norm

__all__ = ["norm_p", "scaled_norm"]
