# componentize-py looks for an exported resource's class in a module named after its interface:
# `connection` of interface `transport` is `transport.Connection`. It lives in app.py, beside the
# code that opens it.
from app import Connection  # noqa: F401
