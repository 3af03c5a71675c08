"""Helpers shared by the test modules (not tests themselves)."""
