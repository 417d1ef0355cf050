#!/usr/bin/env python3
"""Stands in for a person at a browser in the sign-in tests (set as $BROWSER for `rkmcp auth login`).

Opens the URL it is given and follows every redirect, keeping cookies, as a browser does, until the
authorization server sends it back to rkmcp's loopback listener. The provider's login and consent
pages approve at once (see oidc_provider.mjs), so this is a person who approves everything.
"""
import sys

import httpx2 as httpx

with httpx.Client(follow_redirects=True, timeout=30) as client:
    response = client.get(sys.argv[1])
    print(f"browser: {response.status_code} {response.url}", file=sys.stderr)
