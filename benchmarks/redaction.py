"""Redaction per traced span: what masking a span's input, output and metadata costs.

    .venv/bin/python benchmarks/redaction.py [--spans 3000] [--secrets 3]

A traced run masks every string of every span it sends to Langfuse
(integrations/langfuse_client.py ``_masked`` -> core/util/redact.py ``redact_strings``):
a demo with Langfuse configured masks about 17,700 span payloads. The payload here is a
drive-thru chat of 8 messages with a tool call and metadata (~77 strings); the secrets
are registered as a run registers them (the model key, a URL password, the Langfuse
secret, each with the encodings a server echoes). CPU time per payload, best of 3.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval_pipeline.core.util import redact

TURNS = [
    {"role": "user", "content": "I would like a large coffee and two donuts please, thanks!"},
    {"role": "assistant", "content": "Sure — one large coffee and two glazed donuts. Anything "
     "else?", "tool_calls": [{"name": "add_item", "args": {"item": "coffee", "size": "large",
                                                            "qty": 1}}]},
]  # fmt: skip
PAYLOAD = {"messages": TURNS * 4, "metadata": {"run_id": "r-1", "item": "drive-01",
                                              "tags": ["smoke", "drive_thru"]}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=3000)
    parser.add_argument("--secrets", type=int, default=3, help="secrets registered (1-3)")
    args = parser.parse_args()
    secrets = ["sk-bench-model-key-5be0a1", "sk-lf-bench-secret-0f93d2"][: args.secrets]
    for value in secrets:
        redact.register_secret(value)
    if args.secrets >= 3:
        redact.register_url("http://ci:bench-url-password-77c1@127.0.0.1:1/v1")
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for _ in range(args.spans):
            redact.redact_strings(PAYLOAD)
        best = min(best, (time.process_time() - start) / args.spans)
    print("| span payloads | registered secrets (with encodings) | CPU µs per payload |")
    print("|---:|---:|---:|")
    print(f"| {args.spans} | {len(redact._SECRETS)} | {best * 1e6:.0f} |")


if __name__ == "__main__":
    main()
