"""`python -m jaxdiag`: the same CLI as the `jaxdiag` console script."""

from jaxdiag._cli import main

if __name__ == "__main__":
    main()
