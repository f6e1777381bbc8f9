"""A real Prometheus (Debian's 2.42 package) loaded with a History: write OpenMetrics, backfill the
blocks with promtool before the server starts, then serve on loopback.

Backfilled series carry no staleness markers: a scraped series that vanishes (a pod that ended) is
marked stale at once, but a backfilled one stays visible for the whole lookback delta after its
last sample. The server runs with a lookback one minute shorter than the 5-minute sample step
(``lookback``: shorter for histories sampled more often), which gives backfilled data the same
meaning live scraping gives it.
"""

from __future__ import annotations

import io
import shutil
import socket
import subprocess
import time
from pathlib import Path

import requests

from bot.sandbox.history import History, write_openmetrics
from bot.sandbox.httpserver import Incoming, Outgoing


def binaries_available() -> bool:
    return shutil.which("prometheus") is not None and shutil.which("promtool") is not None


class PrometheusServer:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.data = workdir / "data"
        self.port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self.samples = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def load(self, history: History) -> PrometheusServer:
        """Backfill ``history`` (it must end at least 3 hours ago: promtool leaves the head to the server)."""
        self.samples = self.add_blocks(history)
        return self

    def add_blocks(self, history: History, *, name: str = "history", idle_rule: float | None = None) -> int:
        """Write ``history`` as OpenMetrics and turn it into blocks with promtool; returns the samples.
        Safe to call from several threads with different names (the benchmark imports chunks in parallel).
        ``idle_rule``: with the recording rule's series for this threshold (``write_openmetrics``)."""
        source = self.workdir / f"{name}.om"
        with source.open("w", encoding="utf-8", buffering=1 << 22) as out:
            samples = write_openmetrics(history, out, idle_rule=idle_rule)
        self._create_blocks(source)
        return samples

    def add_openmetrics(self, text: str, *, name: str) -> None:
        """Blocks from OpenMetrics text written by a test itself (series a History does not make, such as MIG
        instances); ``text`` ends with ``# EOF``."""
        source = self.workdir / f"{name}.om"
        source.write_text(text, encoding="utf-8")
        self._create_blocks(source)

    def _create_blocks(self, source: Path) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--quiet", str(source), str(self.data)],
            check=True,
            capture_output=True,
        )
        source.unlink()

    def start(
        self,
        *,
        timeout: float = 60.0,
        retention: str = "400d",
        max_block: str | None = None,
        config_text: str = "global:\n  scrape_interval: 1h\n",
        lookback: str = "4m",
    ) -> PrometheusServer:
        """Serve the blocks; a shorter ``retention`` drops the blocks older than it (counted back from
        the newest sample) when the server opens them. ``max_block`` caps how far the server compacts
        blocks (retention drops whole blocks only). ``config_text`` is its prometheus.yml (scrape jobs,
        for tests that scrape). ``lookback``: the query lookback delta, under the history's sample step."""
        config = self.workdir / "prometheus.yml"
        config.write_text(config_text)
        self._process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={self.data}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                f"--storage.tsdb.retention.time={retention}",
                "--query.max-samples=500000000",
                f"--query.lookback-delta={lookback}",
                "--log.level=warn",
                *([f"--storage.tsdb.max-block-duration={max_block}"] if max_block else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=(self.workdir / "prometheus.log").open("wb"),
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError("prometheus exited: " + (self.workdir / "prometheus.log").read_text()[-2000:])
            try:
                if requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
            self._process = None


def with_labels(history: History, labels: dict[str, str]) -> str:
    """The history as OpenMetrics (``write_openmetrics``), every series with ``labels`` added: what a cluster's
    Prometheus sends to a shared Thanos or Mimir with its external labels."""
    out = io.StringIO()
    write_openmetrics(history, out)
    extra = "".join(f'{name}="{value}",' for name, value in labels.items())
    return "".join(
        line if line.startswith("#") else line.replace("{", "{" + extra, 1) for line in out.getvalue().splitlines(True)
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def forward(target: str, incoming: Incoming) -> Outgoing:
    """What a proxy in front of the Prometheus at ``target`` answers when it lets ``incoming`` through."""
    answer = requests.request(
        incoming.method,
        target + incoming.path,
        params=incoming.query,
        data=incoming.body,
        headers={"content-type": incoming.headers.get("content-type", "")},
        timeout=30,
    )
    return Outgoing(answer.status_code, answer.content, {"Content-Type": answer.headers.get("content-type", "application/json")})
