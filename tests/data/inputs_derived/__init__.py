"""Probe package: rules whose operand shapes follow from an int parameter, and a shape-typed static argument."""
