"""tests -- unit tests of the Python packages under python/ (python3 -m unittest discover)."""
