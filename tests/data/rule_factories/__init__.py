"""Rules a function returns (rule factories), for tests/test_rule_factories.py: no module attribute holds them and
no public function calls them."""
