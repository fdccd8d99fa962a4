"""Importing this module segfaults, as an extension built against another ABI can."""

import ctypes

ctypes.string_at(0)  # reads address 0: SIGSEGV while the walk imports this module
