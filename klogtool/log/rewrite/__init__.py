"""Rewriting a log through the writing pipeline (klogtool/log/writing.py): convert-format
(converter), compact (cleaner) and retention-sweep (retention); and explain, which shows the
compaction and retention plans of a partition without writing (it also reads verify's segment
walk: the one import of a sibling package, see tests/test_layers.py).
"""
