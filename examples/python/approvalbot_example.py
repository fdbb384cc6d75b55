#!/usr/bin/env python3
"""An agent talking to approvalbot with Python's standard library only.

Submit a decision request, long-poll for its decision, and verify the
Standard Webhooks signature of a decision response approvalbot POSTs to
your handoff.response_url. Copy the functions you need.

With the bot in local mode in another terminal (`go run ./cmd/approvalbot`):

    python3 examples/python/approvalbot_example.py

then answer the request in the sandbox (http://localhost:8080/sandbox/) as
Alice or Bob. `--bot`, `--token` and `--id` point it elsewhere; `serve`
listens for signed decision responses instead of polling:

    python3 examples/python/approvalbot_example.py serve --port 9000 &
    python3 examples/python/approvalbot_example.py --response-url http://localhost:9000/decisions
"""

import argparse
import base64
import datetime
import hashlib
import hmac
import http.server
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid

# Local mode signs callbacks with this public development secret
# (CALLBACK_SECRET in production).
LOCAL_CALLBACK_SECRET = "whsec_YXBwcm92YWxib3QtbG9jYWwtZGV2ZWxvcG1lbnQ="

OPEN_STATES = ("pending", "partial", "escalated")


class APIError(Exception):
    """A non-2xx answer: status, the bot's message and the offending fields.

    Reads both the plain {"error", "details"} body and RFC 9457 problem
    details (which keep those members)."""

    def __init__(self, status, body, retry_after=None):
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {}
        self.status = status
        self.message = doc.get("error") or doc.get("detail") or doc.get("title") or body[:200]
        self.details = doc.get("details") or []
        self.retry_after = retry_after
        super().__init__("%d: %s %s" % (status, self.message, self.details or ""))


def call(bot, method, path, token="", body=None, timeout=30, attempts=5):
    """One API call, retried on network errors, 503 and 429 with Retry-After.

    Every call here is safe to repeat: a submission carries its artifact.id,
    and the bot answers 200 to an identical resubmission."""
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(1, attempts + 1):
        req = urllib.request.Request(bot.rstrip("/") + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            err = APIError(e.code, e.read().decode("utf-8", "replace"), e.headers.get("Retry-After"))
            retryable = e.code == 503 or (e.code == 429 and err.retry_after is not None)
            if not retryable or attempt == attempts:
                raise err
            wait = float(err.retry_after) if (err.retry_after or "").isdigit() else 0.5 * 2**attempt
        except (urllib.error.URLError, OSError):
            if attempt == attempts:
                raise
            wait = 0.25 * 2**attempt
        time.sleep(min(wait, 30))


def approval_request(prompt, request_id=None, response_url=None, agent_id="python-agent"):
    """A decision/request artifact with one approval decision."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    doc = {
        "aah_version": "0.1",
        "artifact": {"id": request_id or "req_" + str(uuid.uuid4()), "type": "decision/request",
                     "title": prompt, "created_at": now.isoformat().replace("+00:00", "Z")},
        "source": {"agent_id": agent_id},
        "content": {"media_type": "application/vnd.aah.decision-request+json",
                    "body": {"schema": "aah:decision/request@1.0",
                             "data": {"decisions": [{"id": "go", "type": "approval", "prompt": prompt,
                                                     "required": True}]}}},
        "handoff": {"target_role": "human", "expects_response": True},
        "lifecycle": {"status": "pending"},
    }
    if response_url:
        doc["handoff"]["response_url"] = response_url
    return doc


def submit(bot, doc, token=""):
    """POST /v1/requests; returns {"id", "status", ...} (202, or 200 when already stored)."""
    _, answer = call(bot, "POST", "/v1/requests", token, doc)
    return answer


def wait(bot, request_id, token="", poll=50):
    """Long-poll GET /v1/requests/{id}?wait= until the request is closed; returns its view.

    view["response"] is the decision response (absent when withdrawn)."""
    while True:
        try:
            _, view = call(bot, "GET", "/v1/requests/%s?wait=%ds" % (request_id, poll), token, timeout=poll + 30)
        except (urllib.error.URLError, OSError):
            time.sleep(1)  # the bot restarting, a network blip: poll again
            continue
        if view["status"] not in OPEN_STATES:
            return view


def verify_signature(secret, headers, body, tolerance=300, now=None):
    """Verify a Standard Webhooks signature (https://www.standardwebhooks.com/).

    secret: "whsec_<base64 key>"; headers: a mapping with webhook-id,
    webhook-timestamp and webhook-signature (any case); body: the raw bytes.
    Returns True, or raises ValueError saying why it does not verify: missing
    headers, a timestamp more than tolerance seconds from now, or no
    matching v1 signature (compared in constant time)."""
    h = {k.lower(): v for k, v in headers.items()}
    msg_id, ts, sigs = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
    if not (msg_id and ts and sigs):
        raise ValueError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        ts_int = int(ts)
    except ValueError:
        raise ValueError("webhook-timestamp is not Unix seconds")
    now = time.time() if now is None else now
    if abs(now - ts_int) > tolerance:
        raise ValueError("webhook-timestamp is more than %d s from now" % tolerance)
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret, validate=True)
    if isinstance(body, str):
        body = body.encode()
    signed = msg_id.encode() + b"." + ts.encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
    for versioned in sigs.split(" "):
        version, _, sig = versioned.partition(",")
        if version == "v1" and hmac.compare_digest(sig.encode(), expected):
            return True
    raise ValueError("no matching signature")


def serve(port, secret, once=False):
    """Receive decision responses on http://localhost:<port>/: verify, print, answer 204 (401 if bad)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                verify_signature(secret, self.headers, body)
            except ValueError as e:
                self.send_response(401)
                self.end_headers()
                print("refused:", e, flush=True)
                return
            self.send_response(204)
            self.end_headers()
            data = json.loads(body)["content"]["body"]["data"]
            print("verified", data["request_id"], data["overall_status"], flush=True)
            if once:
                self.server.done = True

        def log_message(self, *args):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", port), Handler)
    srv.done = False
    print("listening on", srv.server_address[1], flush=True)
    while not srv.done:
        srv.handle_request()


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", nargs="?", default="ask", choices=["ask", "serve"])
    p.add_argument("--bot", default=os.environ.get("APPROVALBOT_URL", "http://localhost:8080"))
    p.add_argument("--token", default=os.environ.get("APPROVALBOT_TOKEN", ""))
    p.add_argument("--id", help="artifact.id (default: a new one)")
    p.add_argument("--response-url", help="handoff.response_url: where the bot POSTs the decision")
    p.add_argument("--port", type=int, default=9000, help="serve: the port to listen on (0: any)")
    p.add_argument("--once", action="store_true", help="serve: exit after the first verified response")
    p.add_argument("--secret", default=os.environ.get("CALLBACK_SECRET", LOCAL_CALLBACK_SECRET))
    args = p.parse_args(argv)
    if args.mode == "serve":
        serve(args.port, args.secret, args.once)
        return
    sub = submit(args.bot, approval_request("Deploy v2 to production?", args.id, args.response_url), args.token)
    print("submitted", sub["id"], "- answer it in the sandbox:", args.bot.rstrip("/") + "/sandbox/", flush=True)
    view = wait(args.bot, sub["id"], args.token)
    response = view.get("response")
    print(view["status"], response["content"]["body"]["data"]["overall_status"] if response else "", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
