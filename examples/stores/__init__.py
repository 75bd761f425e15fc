"""Small, plain-standard-library stores that ``crashpoint verify`` judges (issue 8)."""
