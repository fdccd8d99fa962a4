"""`python -m jaxdiag`: the same CLI as the `jaxdiag` console script."""

from ._parent._cli import main

if __name__ == "__main__":
    main()
