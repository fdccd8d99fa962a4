"""What shows a finding to the user: the transformation that exposed it and its jaxpr (`_exposure`), plain-JAX repro
scripts verified before they are written (`_repro`)."""
