"""Runs tests/support/fake_anthropic.py for the e2e test: prints its base URL, answers each request
with one text reply (a wrong or missing key gets the API's 401), and prints every request's
key check and the media types of its image blocks as a JSON line."""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from support.fake_anthropic import API_KEY, FakeAnthropic, StreamReply, Text  # noqa: E402

with FakeAnthropic() as server:
    for _ in range(20):
        server.push(StreamReply(blocks=[Text(["Hello from the fake ", "Anthropic server."])]))
    print(json.dumps({"baseUrl": server.base_url, "key": API_KEY}), flush=True)
    seen = 0
    while True:
        time.sleep(0.2)
        for request in server.requests[seen:]:
            key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
            messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
            images = [
                block.get("source", {}).get("media_type")
                for message in messages
                if isinstance(message.get("content"), list)
                for block in message["content"]
                if isinstance(block, dict) and block.get("type") == "image"
            ]
            line = {"path": request.path, "keyMatches": API_KEY in key, "images": images}
            print(json.dumps(line), flush=True)
        seen = len(server.requests)
