"""Rules made inside private helpers that no public function calls (only a private class's methods do)."""
