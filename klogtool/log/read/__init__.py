"""Reading a log: dump-segments (dumper), find (finder, record_filter), describe, stats
(stats, stats_html), diff, and the transactions report.
"""
