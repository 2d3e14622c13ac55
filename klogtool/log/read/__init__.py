"""Reading a log: dump-segments (dumper), find (finder), describe, stats (stats, stats_html),
diff, and the transactions report. find's filters are one level down, in
``klogtool.log.record_filter``: export and verify use them too.
"""
