"""Checking a log: verify (verifier, fleet_verify for Spark). The checks of index
files that verify and rebuild-index share are one level down, in ``klogtool.log.indexcheck``.
"""
