#!/usr/bin/env python3
"""Stands in for a person at a browser in the sign-in tests (set as $BROWSER for `rkmcp auth login`,
or run on the URL `rkmcp auth login --device` prints).

Opens the URL it is given and follows every redirect, keeping cookies, as a browser does; where a
page shows a form (the provider's device-code pages), it submits the form as filled in, as a person
pressing "Continue" would. The provider's login and consent pages approve at once (see
oidc_provider.mjs), so this is a person who approves everything.
"""
import html
import re
import sys
from urllib.parse import urljoin

import httpx2 as httpx

FORM = re.compile(r"<form([^>]*)>(.*?)</form>", re.S | re.I)
ATTR = re.compile(r'([a-zA-Z_-]+)="([^"]*)"')
INPUT = re.compile(r"<input([^>]*)>", re.I)

with httpx.Client(follow_redirects=True, timeout=30) as client:
    response = client.get(sys.argv[1])
    for _ in range(5):
        match = FORM.search(response.text) if "text/html" in response.headers.get("content-type", "") else None
        if not match:
            break
        attrs = dict(ATTR.findall(match.group(1)))
        fields = {}
        for tag in INPUT.findall(match.group(2)):
            a = dict(ATTR.findall(tag))
            if "name" in a:
                fields[a["name"]] = html.unescape(a.get("value", ""))
        action = urljoin(str(response.url), html.unescape(attrs.get("action", "")))
        response = client.post(action, data=fields)
    print(f"browser: {response.status_code} {response.url}", file=sys.stderr)
