"""The evaluation service (``nbeval serve``): nbeval's REST API and a DB-GPT-compatible endpoint.

Needs the ``nbeval[serve]`` extra (FastAPI, uvicorn); nothing of it is imported until used.

    from nbeval.serve import create_app
    app = create_app(token="...", retriever=my_retriever)   # an ASGI app: uvicorn.run(app, ...)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbeval._lazy import lazy_exports

if TYPE_CHECKING:
    from nbeval.serve.app import create_app
    from nbeval.serve.hooks import EndpointApp
    from nbeval.serve.server import serve

__all__ = ["EndpointApp", "create_app", "serve"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {"create_app": "nbeval.serve.app", "EndpointApp": "nbeval.serve.hooks", "serve": "nbeval.serve.server"},
    globals(),
)
