"""Input and output outside the process: Kafka, the embedded broker, capture files, event JSON.

``kafka``: reading offset ranges and producing with confluent-kafka; ``broker``: the embedded tansu
broker; ``capture``: Kafka records in JSON Lines, kcat and Parquet files; ``eventjson``: decoded events
as JSON and text; ``chunks``: fixed-size batches of a stream.
"""
