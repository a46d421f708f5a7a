"""Stack tests: a real OCB-built collector and Prometheus (see conftest.py)."""
