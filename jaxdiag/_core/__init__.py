"""The core both sides of the process boundary share, importing neither JAX nor user code: the report model, errors,
the registry of commands, configuration, filtering, provenance, locations, input validation, the outcome of a dead
process."""
