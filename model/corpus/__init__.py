"""A corpus index: every text of a corpus through a model, each head's metrics and strongest pairs kept in Parquet
shards (index.py), queried with DuckDB (query.py)."""
