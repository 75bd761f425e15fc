"""A target module that fails to import (verify: a bad target, exit 2)."""

raise ImportError("this module needs a library that is not installed")
