"""Rewriting a log through the writing pipeline (klogtool/log/writing.py): convert-format
(converter), compact (cleaner) and retention-sweep (retention).
"""
