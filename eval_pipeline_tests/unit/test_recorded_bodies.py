"""A body nested past what ``json`` reads (issue 47): the recordings reader already read
such a line as malformed (exit 2 naming it), but a tool's request or answer nested 3,000
deep raised RecursionError while it was recorded. Now it is kept as text, and replays."""

from __future__ import annotations

from vcr.request import Request

from eval_pipeline.llm.recording import Belongs, RecordingSession

DEEP = b"[" * 3000 + b"]" * 3000
TOOL = "http://127.0.0.1:9/deep"


def test_a_body_nested_3000_deep_is_recorded_as_text_and_replays(tmp_path):
    path, belongs = tmp_path / "v0.jsonl", Belongs("s", "v0")
    recording = RecordingSession(path, "record", belongs)
    answer = {"status": {"code": 200, "message": "OK"},
              "headers": {"Content-Type": ["application/json"]}, "body": {"string": DEEP}}
    recording.append(Request("POST", TOOL, DEEP, {}), answer)
    recording.save()
    replay = RecordingSession(path, "replay", belongs)
    played = replay.play_response(Request("POST", TOOL, DEEP, {}))
    assert played["status"]["code"] == 200 and played["body"]["string"] == DEEP
    assert replay.misses == 0
