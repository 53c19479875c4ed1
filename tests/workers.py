"""A real Celery worker process (``celery -A config worker``) for the tests that need one, its output in a file."""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO


@dataclass
class Worker:
    process: subprocess.Popen
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 120) -> None:
        """Until the worker says it is ready to take tasks (fails with its output if it stopped or never did)."""
        deadline = time.monotonic() + timeout
        while "ready." not in self.output():
            if self.process.poll() is not None or time.monotonic() > deadline:
                lines = [line for line in self.output().splitlines() if not line.startswith("import time:")]
                raise AssertionError("the Celery worker did not start:\n" + "\n".join(lines)[-3000:])
            time.sleep(0.2)


@contextmanager
def celery_worker(log: Path, name: str, *, env: dict, queues: tuple[str, ...] = (), concurrency: int = 1,
                  python_args: tuple[str, ...] = ()):
    """A worker on ``queues`` (none given: the worker's own default list, as a plain ``celery -A config worker``),
    with the solo pool for one task at a time or prefork processes; stopped (and killed if it hangs) on exit."""
    pool = ["--pool=solo"] if concurrency == 1 else ["--pool=prefork", f"--concurrency={concurrency}"]
    command = [sys.executable, *python_args, "-m", "celery", "-A", "config", "worker", *pool, "--without-gossip",
               "--without-mingle", "--without-heartbeat", "--loglevel=INFO", "-n", f"{name}@localhost"]
    if queues:
        command += ["-Q", ",".join(queues)]
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env | {"PYTHONUNBUFFERED": "1"}, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield Worker(process, log)
        finally:
            stop(process)


def stop(process: subprocess.Popen, timeout: float = 30) -> None:
    """Stop a worker (a warm shutdown: the task at hand finishes), killed if it does not stop in ``timeout``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
