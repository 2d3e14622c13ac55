"""klogtool on Apache Spark (the ``spark`` extra): the only package that imports pyspark.

- :class:`KafkaSegmentsDataSource` — ``spark.read.format("kafka-segments")`` (see
  :mod:`klogtool.spark.source` for its schema and options);
- :func:`register` — register it with a session and enable filter pushdown;
- :func:`get_session` — a session configured as klogtool's commands use it;
- :mod:`klogtool.spark.jobs` — the export and fleet-verify jobs.

Usage from PySpark::

    from klogtool.spark import register
    register(spark)
    df = spark.read.format("kafka-segments").load("/var/lib/kafka/data")
"""

from klogtool.spark.session import get_session, register
from klogtool.spark.source import NAME, KafkaSegmentsDataSource

__all__ = ["NAME", "KafkaSegmentsDataSource", "get_session", "register"]
