"""`cleveragents run --image PATH`, the real command in a subprocess, to the fake servers."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from PIL import Image

from support.fake_anthropic import API_KEY, FakeAnthropic, StreamReply, Text
from support.fake_openai import FakeOpenAIServer, text_reply

CLI = [sys.executable, "-m", "cleveragents"]


def image_file(tmp_path: Path, name: str, kind: str, size: tuple[int, int]) -> Path:
    out = io.BytesIO()
    Image.new("RGB", size, (1, 2, 3)).save(out, format=kind)
    path = tmp_path / name
    path.write_bytes(out.getvalue())
    return path


def cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {
        **os.environ,
        "CLEVERAGENTS_PROVIDER": "",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "COLUMNS": "500",  # no wrapped lines to match
        **env,
    }
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=120, env=full_env, check=False
    )


def test_two_images_reach_anthropic_and_the_run_lists_them(tmp_path: Path, sandbox: Path) -> None:
    png = image_file(tmp_path, "diagram.png", "PNG", (120, 80))
    gif = image_file(tmp_path, "anim.gif", "GIF", (16, 16))
    with FakeAnthropic() as fake:
        fake.push(StreamReply([Text(["two pictures"])]))
        done = cli(
            tmp_path,
            "run",
            "compare these",
            "--sandbox",
            str(sandbox),
            "--provider",
            "anthropic",
            "--base-url",
            fake.base_url,
            "--image",
            str(png),
            "--image",
            str(gif),
            "--json",
            ANTHROPIC_API_KEY=API_KEY,
        )
        assert done.returncode == 0, done.stderr
        (request,) = fake.requests
    blocks = request.body["messages"][0]["content"]
    assert [(b["type"], b.get("source", {}).get("media_type")) for b in blocks] == [
        ("image", "image/png"),
        ("image", "image/gif"),
        ("text", None),
    ]
    assert blocks[0]["source"]["data"] == base64.b64encode(png.read_bytes()).decode()
    assert f"image {png}, PNG 120x80" in done.stderr  # the live view names each image
    run_id = json.loads(done.stdout)["runId"]
    shown = cli(tmp_path, "runs", "show", run_id, "--json")
    stored = json.loads(shown.stdout)["images"]
    assert [(i["name"], i["mediaType"], i["width"]) for i in stored] == [
        (str(png), "image/png", 120),
        (str(gif), "image/gif", 16),
    ]


def test_an_image_alone_is_a_prompt(tmp_path: Path, sandbox: Path) -> None:
    png = image_file(tmp_path, "error.png", "PNG", (40, 30))
    with FakeAnthropic() as fake:
        fake.push(StreamReply([Text(["a dialog"])]))
        done = cli(
            tmp_path,
            "run",
            "",
            "--sandbox",
            str(sandbox),
            "--provider",
            "anthropic",
            "--base-url",
            fake.base_url,
            "--image",
            str(png),
            ANTHROPIC_API_KEY=API_KEY,
        )
        assert done.returncode == 0, done.stderr
        (request,) = fake.requests
    assert [b["type"] for b in request.body["messages"][0]["content"]] == ["image"]
    empty = cli(tmp_path, "run", "", "--sandbox", str(sandbox), "--provider", "offline")
    assert empty.returncode == 2
    assert "must not be empty (unless images are attached)" in empty.stderr


def test_an_image_reaches_openai_as_a_data_url(tmp_path: Path, sandbox: Path) -> None:
    jpeg = image_file(tmp_path, "photo.jpg", "JPEG", (40, 30))
    with FakeOpenAIServer() as fake:
        fake.enqueue(text_reply("a photo"))
        done = cli(
            tmp_path,
            "run",
            "what is it",
            "--sandbox",
            str(sandbox),
            "--provider",
            "openai",
            "--model",
            "gpt-4o",
            "--base-url",
            fake.base_url,
            "--image",
            str(jpeg),
            CLEVERAGENTS_OPENAI_VISION="1",
        )
        assert done.returncode == 0, done.stderr
        (body,) = fake.bodies
    parts = body["messages"][-1]["content"]
    url = f"data:image/jpeg;base64,{base64.b64encode(jpeg.read_bytes()).decode()}"
    assert parts[1] == {"type": "image_url", "image_url": {"url": url}}


def test_refusals_name_the_file_and_nothing_runs(tmp_path: Path, sandbox: Path) -> None:
    text = tmp_path / "notes.png"
    text.write_text("not an image")
    done = cli(tmp_path, "run", "look", "--sandbox", str(sandbox), "--image", str(text))
    assert done.returncode == 2
    assert f"image '{text}': not a PNG, JPEG, GIF or WebP image" in done.stderr
    png = image_file(tmp_path, "fine.png", "PNG", (4, 4))
    done = cli(tmp_path, "run", "look", "--sandbox", str(sandbox), "--image", str(png))
    assert done.returncode == 2
    assert "the offline model cannot see images" in done.stderr
    listed = cli(tmp_path, "runs", "list", "--json")
    assert json.loads(listed.stdout or "[]") == []
