"""A small library for tests/test_record.py: a primitive whose bind param is a callable (it cannot be written to
a calls file) and a custom_vjp with a dtype in `nondiff_argnums`."""
