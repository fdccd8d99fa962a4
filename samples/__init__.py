"""Bad and good samples, one pair per rule, plus the two seed questions. Documentation and test fixtures."""
