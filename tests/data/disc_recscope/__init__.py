"""Two modules of one package: `jaxdiag check disc_recscope.softplus` checks softplus's rules only, even when the
recording (of the whole test suite) also holds a closure rule of `other`."""
