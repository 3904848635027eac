"""Storage: a result on disk.

Saving a folder whole or not at all, loading and checking it (Parquet tables, the dataset, the save id, the fingerprint,
cross-file consistency), human labels, and the limits on how much text a result keeps.
"""
