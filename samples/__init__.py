"""Bad and good samples, one pair per rule, plus the seed questions: documentation and test fixtures.

Shipped as package data of `jaxdiag.samples` and read with `importlib.resources` (`jaxdiag rules CODE` prints
them); nothing here is imported by jaxdiag, and importing a sample builds nothing. A trailing
`# jaxdiag-expect: CODE` comment marks the line each error or warning of a bad sample is reported at.
"""
