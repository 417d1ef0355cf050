# componentize-py looks for an exported resource's class in a module named after its interface:
# `session` of interface `detector` is `detector.Session`. It lives in app.py, beside the rest.
from app import Session  # noqa: F401
