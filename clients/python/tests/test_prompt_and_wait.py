"""``prompt_and_wait`` is typed like ``prompt``: keywords (``message=``, ``images=``, ``streaming_behavior=``) or one
``PromptParams`` dict; a misspelt key or keyword fails ``mypy --strict``. The untyped ``(params, timeout)`` form the
generated ``run()`` uses still works."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from dreb_rpc import AsyncDrebClient, DrebClient, RpcError

GOOD = """
from dreb_rpc import AsyncDrebClient, DrebClient, RpcEvent

def sync_host(client: DrebClient) -> list[RpcEvent]:
    a = client.prompt_and_wait(message="hi")
    b = client.prompt_and_wait(message="hi", streaming_behavior="steer", timeout=5)
    c = client.prompt_and_wait({"message": "hi", "streamingBehavior": "followUp"})
    d = client.prompt_and_wait({"message": "hi"}, timeout=None)
    return a + b + c + d

async def async_host(client: AsyncDrebClient) -> list[RpcEvent]:
    return await client.prompt_and_wait(message="hi") + await client.prompt_and_wait({"message": "hi"})
"""

BAD = {
    "a misspelt keyword": 'client.prompt_and_wait(mesage="hi")',
    "a misspelt dict key": 'client.prompt_and_wait({"mesage": "hi"})',
    "a misspelt dict key with a timeout keyword": 'client.prompt_and_wait({"mesage": "hi"}, timeout=5)',
    "a wrong streaming behaviour": 'client.prompt_and_wait(message="hi", streaming_behavior="later")',
    "no message": "client.prompt_and_wait()",
    "a snake_case wire key": 'client.prompt_and_wait({"message": "hi", "streaming_behavior": "steer"})',
}


def _mypy(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    file = tmp_path / f"{name}.py"
    file.write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), str(file)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_typed_forms_pass_mypy_strict_and_mistakes_do_not(tmp_path: Path) -> None:
    good = _mypy(tmp_path, "good", GOOD)
    assert good.returncode == 0, good.stdout + good.stderr
    # One file, one mistake per function: each must be reported on its own line.
    lines = ["from dreb_rpc import DrebClient", ""]
    for i, call in enumerate(BAD.values()):
        lines += [f"def bad_{i}(client: DrebClient) -> None:", f"    {call}", ""]
    bad = _mypy(tmp_path, "bad", "\n".join(lines))
    assert bad.returncode == 1, bad.stdout
    reported = {int(line.split(":")[1]) for line in bad.stdout.splitlines() if ": error:" in line}
    for i, what in enumerate(BAD):
        assert 4 + 3 * i in reported, f"{what} was not reported:\n{bad.stdout}"


def test_keywords_send_the_wire_keys(fake_agent_path: str) -> None:
    with DrebClient.spawn(sys.executable, command_args=["-I", fake_agent_path]) as client:
        events = client.prompt_and_wait(message="hello", timeout=30)
        assert [e["type"] for e in events][-1] == "agent_end"
        # The fake agent refuses the message "keys" with the list of keys it got.
        with pytest.raises(RpcError, match="^id,type,message,streamingBehavior$"):
            client.prompt_and_wait(message="keys", streaming_behavior="steer")
        with pytest.raises(RpcError, match="^id,type,message,images$"):
            client.prompt_and_wait({"message": "keys", "images": []})
        with pytest.raises(TypeError, match="not both"):
            client.prompt_and_wait({"message": "hi"}, message="hi")  # type: ignore[call-overload]
        with pytest.raises(TypeError, match="message="):
            client.prompt_and_wait()  # type: ignore[call-overload]


def test_async_keywords_send_the_wire_keys(fake_agent_path: str) -> None:
    async def main() -> None:
        async with AsyncDrebClient.spawn(sys.executable, command_args=["-I", fake_agent_path]) as client:
            events = await client.prompt_and_wait(message="hello")
            assert [e["type"] for e in events][-1] == "agent_end"
            with pytest.raises(RpcError, match="^id,type,message,streamingBehavior$"):
                await client.prompt_and_wait(message="keys", streaming_behavior="followUp")

    asyncio.run(main())
