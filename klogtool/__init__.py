"""klogtool: offline tools for Apache Kafka log segment directories."""

__version__ = "0.1.0"
