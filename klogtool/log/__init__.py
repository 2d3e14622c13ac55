"""klogtool's library: partitions and log dirs on disk, as plain functions (no click, no rich).

Grouped by what they serve, each group a package:

- ``read``: dump-segments, find, describe, stats, diff, the transactions report.
- ``check``: verify, the index-file checks it shares with rebuild-index, explain.
- ``repair``: truncate-recovery and rebuild-index, as the broker's recovery.
- ``rewrite``: convert-format, compact, retention-sweep.
- ``export``: the Arrow reader behind export and the Spark data source.

What several groups share stays here: ``layout`` (file names), ``files`` and ``targets`` (PATH
arguments), ``segment`` (read-only mmaps, progress), ``partition`` (a partition as the broker
loads it, ``PartitionContext``), ``txnreplay`` (transactions, the broker's replay), ``indexer``
(index entries by the broker's rule), ``atomic`` (writing without half-written files, the
broker's lock), ``writing`` (the writing commands' pipeline), ``findings``, ``topicconfig`` and
``pool``; ``context`` is the ``ReadContext`` every read runs under. docs/architecture.md has
the layers.
"""
