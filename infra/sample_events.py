#!/usr/bin/env python3
"""Writes events/*.json: one sample Lambda event per function, as API Gateway (HTTP API,
payload 2.0) and SQS deliver them. Run it after changing a sample; the signature of the
WhatsApp sample is computed here with the documented test secret, never by hand.

    python3 infra/sample_events.py      # rewrites events/
    python3 infra/sample_events.py --check  # fails when events/ differs from what it would write

The secrets below are TEST values, documented in events/README.md; never use them for real.
"""
import hashlib
import hmac
import json
import pathlib
import sys

WHATSAPP_APP_SECRET = "steward-sample-app-secret"
TELEGRAM_WEBHOOK_SECRET = "steward-sample-telegram-secret-0123456789"
WEB_SESSION = "steward-sample-session-0123456789abcdefghijklmnopqrstuv"
WEB_CSRF = "steward-sample-csrf-0123456789abcdefghijklmnopqrstuvwx"
API_HOST = "abc123defg.execute-api.eu-west-1.amazonaws.com"
TIME_EPOCH_MS = 1780304400000  # 2026-06-01T09:00:00Z

EVENTS = pathlib.Path(__file__).resolve().parent.parent / "events"


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def http_event(method, path, headers, body, query=""):
    """An API Gateway HTTP API (payload format 2.0) proxy event."""
    cookies = []
    if "cookie" in headers:
        cookies = [c.strip() for c in headers.pop("cookie").split(";")]
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {
            "host": API_HOST,
            "user-agent": "steward-sample",
            "x-forwarded-for": "203.0.113.7",
            "x-forwarded-port": "443",
            "x-forwarded-proto": "https",
            **headers,
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": API_HOST.split(".")[0],
            "domainName": API_HOST,
            "domainPrefix": API_HOST.split(".")[0],
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "steward-sample",
            },
            "requestId": f"sample-{method.lower()}-{path.strip('/').replace('/', '-')}",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jun/2026:09:00:00 +0000",
            "timeEpoch": TIME_EPOCH_MS,
        },
        "body": body,
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    return event


def whatsapp():
    body = compact({
        "object": "whatsapp_business_account",
        "entry": [{
            "id": "102290129340398",
            "changes": [{
                "field": "messages",
                "value": {
                    "messaging_product": "whatsapp",
                    "metadata": {"display_phone_number": "15550783881", "phone_number_id": "106540352242922"},
                    "contacts": [{"profile": {"name": "Sheena Nelson"}, "wa_id": "16505551234"}],
                    "messages": [{
                        "from": "16505551234",
                        "id": "wamid.SAMPLE0000000000000000000001",
                        "timestamp": "1780304400",
                        "type": "text",
                        "text": {"body": "Set up my event for Saturday, two tracks"},
                    }],
                },
            }],
        }],
    })
    signature = hmac.new(WHATSAPP_APP_SECRET.encode(), body.encode(), hashlib.sha256).hexdigest()
    return http_event("POST", "/webhooks/whatsapp", {
        "content-type": "application/json",
        "x-hub-signature-256": f"sha256={signature}",
    }, body)


def telegram():
    body = compact({
        "update_id": 875310001,
        "message": {
            "message_id": 1365,
            "from": {"id": 111222333, "is_bot": False, "first_name": "Ada", "username": "ada", "language_code": "en"},
            "chat": {"id": 111222333, "first_name": "Ada", "username": "ada", "type": "private"},
            "date": 1780304400,
            "text": "Close registration on Thursday",
        },
    })
    return http_event("POST", "/webhooks/telegram", {
        "content-type": "application/json",
        "x-telegram-bot-api-secret-token": TELEGRAM_WEBHOOK_SECRET,
    }, body)


def mcp():
    body = compact({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    return http_event("POST", "/mcp", {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        "authorization": "Bearer stw_REPLACE_WITH_YOUR_TOKEN",
    }, body)


def web_chat():
    body = compact({"id": "sample-web-message-0001", "text": "What is on this Saturday?"})
    return http_event("POST", "/api/chat/messages", {
        "content-type": "application/json",
        "origin": f"https://{API_HOST}",
        "x-csrf-token": WEB_CSRF,
        "cookie": f"steward_session={WEB_SESSION}",
    }, body)


def sqs_batch():
    """Two conversations (a WhatsApp and a Telegram one), two messages in the first."""
    def inbound(channel, conversation, message_id, text, message_ref, name):
        # Exactly what the webhook function enqueues for the webhook samples (its test checks).
        return {
            "channel": channel,
            "conversation_id": conversation,
            "external_user_id": conversation,
            "provider_message_id": message_id,
            "message_ref": message_ref,
            "text": text,
            "timestamp": 1780304400,
            "display_name": name,
        }

    records = [
        ("wa:16505551234", inbound("whatsapp", "16505551234", "wamid.SAMPLE0000000000000000000001",
                                   "Set up my event for Saturday, two tracks", "wamid.SAMPLE0000000000000000000001",
                                   "Sheena Nelson")),
        ("tg:111222333", inbound("telegram", "111222333", "875310001", "Close registration on Thursday", "1365", "Ada")),
        ("wa:16505551234", inbound("whatsapp", "16505551234", "wamid.SAMPLE0000000000000000000002",
                                   "Thanks!", "wamid.SAMPLE0000000000000000000002", "Sheena Nelson")),
    ]
    out = []
    for i, (group, message) in enumerate(records):
        body = compact(message)
        out.append({
            "messageId": f"0000000{i + 1}-5a3e-4c4d-9d0a-sample{i + 1:06d}",
            "receiptHandle": f"sample-receipt-handle-{i + 1}",
            "body": body,
            "attributes": {
                "ApproximateReceiveCount": "1",
                "SentTimestamp": str(TIME_EPOCH_MS + i),
                "SequenceNumber": str(18849496460467696128 + i),
                "MessageGroupId": group,
                "SenderId": "AROAEXAMPLE:steward-webhook",
                "MessageDeduplicationId": message["provider_message_id"],
                "ApproximateFirstReceiveTimestamp": str(TIME_EPOCH_MS + 10 + i),
            },
            "messageAttributes": {},
            "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:steward-TurnQueue-EXAMPLE.fifo",
            "awsRegion": "eu-west-1",
        })
    return {"Records": out}


SAMPLES = {
    "webhook-whatsapp.json": whatsapp,
    "webhook-telegram.json": telegram,
    "mcp-tools-list.json": mcp,
    "web-chat-message.json": web_chat,
    "agent-sqs-batch.json": sqs_batch,
}


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, make in SAMPLES.items():
        text = json.dumps(make(), indent=2, ensure_ascii=False) + "\n"
        path = EVENTS / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            EVENTS.mkdir(exist_ok=True)
            path.write_text(text)
    if stale:
        print("events/ is out of date (run python3 infra/sample_events.py): " + ", ".join(stale), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
