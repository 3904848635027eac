"""The evaluation service (``nbeval serve``): nbeval's REST API and a DB-GPT-compatible endpoint."""
