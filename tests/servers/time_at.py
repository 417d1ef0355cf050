#!/usr/bin/env python3
"""The real `mcp-server-time` (PyPI) with its clock stopped at one instant, so a test that asks a
greedy model about the time gets the same tool result, hence the same answer, on every run.

Why: the default model is tiny (SmolLM2-135M). Whether it copies a timestamp faithfully depends
on the timestamp's digits (at 20:20 Tokyo time it answered a made-up 2019 date, a few minutes
later it copied correctly), so a test reading the wall clock passed or failed by the hour.
Only `datetime.now` is replaced; every line of the server's own code runs.

Usage: time_at.py UTC-INSTANT [mcp-server-time arguments…]
       time_at.py 2031-05-17T03:42:08Z --local-timezone UTC
"""

import sys
from datetime import datetime, timezone

import mcp_server_time
import mcp_server_time.server as server

AT = datetime.fromisoformat(sys.argv[1].replace("Z", "+00:00")).astimezone(timezone.utc)


class StoppedClock(datetime):
    @classmethod
    def now(cls, tz=None):
        return AT.astimezone(tz) if tz is not None else AT.replace(tzinfo=None)


server.datetime = StoppedClock
sys.argv = [sys.argv[0], *sys.argv[2:]]
mcp_server_time.main()
