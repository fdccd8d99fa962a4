"""A package whose module imports a helper relatively (verified fixes load the edited copy in its package)."""
