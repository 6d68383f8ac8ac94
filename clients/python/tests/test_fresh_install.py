"""The package installs into a fresh venv, as a newcomer's ``pip install ./clients/python`` does: a wheel built from a
copy of the sources (offline, with this venv's setuptools) is installed into a new venv with nothing else in it; a host
there passes ``mypy --strict`` against the installed package (its ``py.typed`` shipped) and, with ``DREB_BIN``, runs
with ``dreb`` found on ``PATH`` (as after ``cargo install``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DREB_BIN = os.environ.get("DREB_BIN", "")

HOST = """
import json

from dreb_rpc import DrebClient, RpcError, RpcEvent, __version__

seen: list[str] = []


def on_event(event: RpcEvent) -> None:
    if event["type"] == "agent_end":
        seen.append(f"agent_end {len(event['messages'])}")


with DrebClient.spawn(provider="faux", args=["--no-session"]) as client:
    client.on_event(on_event)
    result = client.run(message="hello")
    try:
        client.prompt(message="/fork")
    except RpcError:
        seen.append("refused")
print(json.dumps({"version": __version__, "seen": seen, "final": result.final_text, "stop": result.stop_reason}))
"""


def run(*argv: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with only the built dreb-rpc wheel installed; returns its python."""
    tmp = tmp_path_factory.mktemp("fresh")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    wheels = tmp / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index", "--no-build-isolation",
        "--disable-pip-version-check", "-w", str(wheels), str(source))
    [wheel] = list(wheels.glob("dreb_rpc-*.whl"))
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    run(str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--disable-pip-version-check", str(wheel))
    return python


def test_the_fresh_venv_has_only_the_installed_package(fresh: Path, tmp_path: Path) -> None:
    where = run(str(fresh), "-c", "import dreb_rpc, dreb_extension; print(dreb_rpc.__file__)", cwd=tmp_path).stdout.strip()
    assert where.startswith(str(fresh.parent.parent)), where  # the venv's site-packages, not this checkout
    assert (Path(where).parent / "py.typed").is_file()
    listed = json.loads(run(str(fresh), "-m", "pip", "list", "--format", "json", "--disable-pip-version-check").stdout)
    assert "dreb-rpc" in {p["name"] for p in listed}
    assert "mypy" not in {p["name"] for p in listed}


def test_a_host_passes_mypy_strict_against_the_installed_package(fresh: Path, tmp_path: Path) -> None:
    host = tmp_path / "host.py"
    host.write_text(HOST, encoding="utf-8")
    # This venv's mypy, resolving imports from the fresh venv's site-packages only.
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"),
         "--python-executable", str(fresh), str(host)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # And a mistake is caught there (the types come from the installed package).
    host.write_text(HOST.replace('message="hello"', 'mesage="hello"'), encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"),
         "--python-executable", str(fresh), str(host)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert bad.returncode == 1 and 'Unexpected keyword argument "mesage"' in bad.stdout, bad.stdout


@pytest.mark.skipif(not DREB_BIN, reason="set DREB_BIN to a dreb binary to run against the real agent")
def test_the_host_runs_in_the_fresh_venv_with_dreb_on_path(fresh: Path, tmp_path: Path) -> None:
    host = tmp_path / "host.py"
    host.write_text(HOST, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("DREB_BIN", "DREB_FAUX_SCENARIO", "PYTHONPATH")}
    env.update(HOME=str(tmp_path), DREB_CODING_AGENT_DIR=str(tmp_path / "agent"))
    env["PATH"] = str(Path(DREB_BIN).resolve().parent) + os.pathsep + env.get("PATH", "")
    outcome = json.loads(run(str(fresh), str(host), cwd=tmp_path, env=env).stdout)
    assert outcome["seen"] == ["agent_end 4", "refused"]
    assert "faux provider" in outcome["final"] and outcome["stop"] == "stop"
    assert outcome["version"] == __import__("dreb_rpc").__version__
