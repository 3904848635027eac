"""What ``nbeval.evaluate`` accepts as data, made into a dataset.

That is a dataset, a lab, a suite (an error: it has no answers), a DataFrame, records or a path to
any file nbeval reads.
"""

from __future__ import annotations

import os
from typing import Any

from nbeval.data.model import LlmDataset, TestLab, TestSuite
from nbeval.data.tabular import is_dataframe
from nbeval.errors import DataError

__all__ = ["to_dataset"]


def to_dataset(data: Any) -> tuple[LlmDataset, TestLab | None]:
    """A dataset from anything ``evaluate`` accepts (and the lab, when one was given)."""
    from nbeval.data.readers import load, read_pandas

    if isinstance(data, LlmDataset):
        return data, None
    if isinstance(data, TestLab):
        return data.dataset, data
    if isinstance(data, TestSuite):
        msg = (
            "a test suite has no answers to evaluate; complete it into a lab first "
            "(nbeval.collect(suite, models=[...]).complete()) or attach answers"
        )
        raise DataError(msg)
    if is_dataframe(data):
        return read_pandas(data), None
    if isinstance(data, list):
        return LlmDataset.from_records(data), None
    if isinstance(data, (str, os.PathLike)):
        loaded = load(data)
        if isinstance(loaded, TestSuite):
            return to_dataset(loaded)
        if isinstance(loaded, TestLab):
            return loaded.dataset, loaded
        return loaded, None
    msg = f"cannot evaluate a {type(data).__name__}; give a dataset, a lab, a DataFrame, records or a path"
    raise DataError(msg)
