#!/usr/bin/env python3
"""Checks a Steward MCP endpoint with the official Python SDK (`mcp`, pinned by
infra/mcp-python-client.sh): connects over Streamable HTTP with a bearer token, lists the tools,
creates a record and reads it back — once per protocol mode:

  auto    the SDK probes `server/discover` and speaks the stateless 2026-07-28 protocol;
  legacy  the `initialize` handshake (2025-11-25).

It also checks that a wrong token is refused (HTTP 401).

Usage:
  mcp_client_check.py [--url URL] [--token TOKEN] [--mode auto|legacy|both]
                      [--create-tool NAME] [--create-args JSON]
                      [--read-tool NAME] [--read-args JSON]

Each option falls back to an environment variable: MCP_URL, MCP_TOKEN, MCP_MODE,
MCP_CREATE_TOOL, MCP_CREATE_ARGS, MCP_READ_TOOL, MCP_READ_ARGS. In the read arguments every
string "{id}" is replaced by the created record's id (the create result's
structuredContent.data.id). The defaults fit the events domain (what Steward serves); for other domains:

  --create-tool create_event --create-args '{"name": "Summer Meetup", ...}'
  --read-tool get_event --read-args '{"event_id": "{id}"}'

Exit status 0 when every check passes.
"""

import argparse
import asyncio
import json
import os
import sys
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

DEFAULT_CREATE_TOOL = "create_event"
DEFAULT_CREATE_ARGS = '{"name": "Python client check", "dates": ["2031-05-17"], "start_time": "09:00", "end_time": "17:00", "venue": "Town hall"}'
DEFAULT_READ_TOOL = "get_event"
DEFAULT_READ_ARGS = '{"event_id": "{id}"}'


class CheckFailed(Exception):
    """A check did not hold."""


def parse_args() -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=env("MCP_URL"), help="the /mcp URL (MCP_URL)")
    parser.add_argument("--token", default=env("MCP_TOKEN"), help="a bearer token (MCP_TOKEN)")
    parser.add_argument("--mode", default=env("MCP_MODE", "both"), choices=["auto", "legacy", "both"])
    parser.add_argument("--create-tool", default=env("MCP_CREATE_TOOL", DEFAULT_CREATE_TOOL))
    parser.add_argument("--create-args", default=env("MCP_CREATE_ARGS", DEFAULT_CREATE_ARGS))
    parser.add_argument("--read-tool", default=env("MCP_READ_TOOL", DEFAULT_READ_TOOL))
    parser.add_argument("--read-args", default=env("MCP_READ_ARGS", DEFAULT_READ_ARGS))
    args = parser.parse_args()
    if not args.url or not args.token:
        parser.error("--url and --token (or MCP_URL and MCP_TOKEN) are required")
    return args


def with_id(value: Any, record_id: str) -> Any:
    """`value` with every "{id}" inside its strings replaced by `record_id`."""
    if isinstance(value, str):
        return value.replace("{id}", record_id)
    if isinstance(value, list):
        return [with_id(v, record_id) for v in value]
    if isinstance(value, dict):
        return {k: with_id(v, record_id) for k, v in value.items()}
    return value


def result_json(result: Any) -> dict[str, Any]:
    """The outcome JSON of a tool result: structuredContent, else the first text item."""
    if isinstance(result.structured_content, dict):
        return result.structured_content
    for item in result.content:
        text = getattr(item, "text", None)
        if text:
            return json.loads(text)
    raise CheckFailed(f"the result has neither structuredContent nor text: {result!r}")


def http_client(token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30.0, read=120.0),
    )


async def check_mode(args: argparse.Namespace, mode: str) -> None:
    async with http_client(args.token) as http:
        transport = streamable_http_client(args.url, http_client=http)
        async with Client(transport, mode=mode, raise_exceptions=True) as client:
            version = client.protocol_version
            listed = await client.list_tools()
            names = [t.name for t in listed.tools]
            print(f"[{mode}] protocol {version}: {len(names)} tools: {', '.join(names)}")
            for needed in (args.create_tool, args.read_tool):
                if needed not in names:
                    raise CheckFailed(f"[{mode}] tool {needed!r} is not listed")
            read_tool = next(t for t in listed.tools if t.name == args.read_tool)
            if not (read_tool.annotations and read_tool.annotations.read_only_hint):
                raise CheckFailed(f"[{mode}] {args.read_tool} is not annotated readOnlyHint")

            created = await client.call_tool(args.create_tool, json.loads(args.create_args))
            outcome = result_json(created)
            if created.is_error:
                raise CheckFailed(f"[{mode}] {args.create_tool} failed: {outcome}")
            record_id = (outcome.get("data") or {}).get("id")
            if not isinstance(record_id, str):
                raise CheckFailed(f"[{mode}] {args.create_tool} returned no data.id: {outcome}")
            print(f"[{mode}] {args.create_tool}: {outcome.get('summary')} (id {record_id})")

            read_args = with_id(json.loads(args.read_args), record_id)
            read = await client.call_tool(args.read_tool, read_args)
            outcome = result_json(read)
            if read.is_error:
                raise CheckFailed(f"[{mode}] {args.read_tool} failed: {outcome}")
            if record_id not in json.dumps(outcome):
                raise CheckFailed(f"[{mode}] {args.read_tool} did not return record {record_id}: {outcome}")
            print(f"[{mode}] {args.read_tool}: {outcome.get('summary')}")


async def check_wrong_token_refused(args: argparse.Namespace) -> None:
    async with http_client("stw_not-a-valid-token") as http:
        response = await http.post(
            args.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    challenge = response.headers.get("www-authenticate", "")
    if response.status_code != 401 or not challenge.startswith("Bearer"):
        raise CheckFailed(f"a wrong token got HTTP {response.status_code} ({challenge!r}), expected 401 Bearer")
    print("wrong token: 401 with WWW-Authenticate: Bearer")


async def main() -> int:
    args = parse_args()
    modes = ["auto", "legacy"] if args.mode == "both" else [args.mode]
    try:
        for mode in modes:
            await check_mode(args, mode)
        await check_wrong_token_refused(args)
    except CheckFailed as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        return 1
    print("mcp client check: OK")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
