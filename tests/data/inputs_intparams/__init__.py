"""Probe package: rules reached only through public wrappers that take int parameters (a bandlimit `L`, an order
`n`), which inference must give a Python int, never an array."""
