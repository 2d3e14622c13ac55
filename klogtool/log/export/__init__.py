"""Exporting a log to Parquet/JSON through Arrow: the record-batch reader that the local engine
and the Spark data source share (arrow_reader) and the local exporter (exporter).
"""
