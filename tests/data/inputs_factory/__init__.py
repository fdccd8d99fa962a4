"""A package whose primitives are all made by a shared factory that other modules call as they are imported."""
