"""What a stream holds: per-table and per-partition counts, watermarks, DDL timeline, bad records, a plot.

``summary``: reading a stream into a summary and printing it; ``plot``: the summary as a matplotlib figure.
"""
