"""A rule made on every call, closing over an object of arrays its function computed, taking a list."""
