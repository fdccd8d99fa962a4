"""A package one of whose submodules kills the process that imports it (a segfault in native code at import)."""
