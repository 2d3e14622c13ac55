"""Checking a log: verify (verifier, fleet_verify for Spark), the checks of index files that
verify and rebuild-index share (indexcheck), and explain.
"""
