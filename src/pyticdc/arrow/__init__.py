"""Typed rows as Arrow, shared by the Delta replica and Spark (pyarrow only, no JVM).

``rows``: Kafka records → one decoded event per row (canonical text images, TableInfo JSON);
``types``: the Arrow type of every MySQL column type and the projection of those rows to typed columns.
"""
