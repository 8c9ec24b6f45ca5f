"""Grafana Mimir as a multi-tenant backend, on 127.0.0.1: monolithic (``-target=all``), blocks
on the filesystem, rings in memory, usage reporting off, multi-tenancy on (every request
names its tenant in ``X-Scope-OrgID``). Samples reach a tenant by Prometheus remote write
1.0 (a snappy-framed protobuf ``WriteRequest``, encoded here: the test needs a few samples,
not a client library), as an agent or Prometheus would send them.
"""

from __future__ import annotations

import struct
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from localcluster import free_port
from localcluster.tools import wait_until

TENANT_HEADER = "X-Scope-OrgID"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def write_request(series: list[tuple[dict[str, str], float]], at_ms: int) -> bytes:
    """prometheus.WriteRequest: TimeSeries (field 1) of Labels (1: name 1, value 2, sorted by
    name) and one Sample (2: value 1 as a double, timestamp 2 in ms)."""
    out = b""
    for labels, value in series:
        ts = b"".join(
            _field(1, _field(1, k.encode()) + _field(2, v.encode())) for k, v in sorted(labels.items())
        )
        sample = b"\x09" + struct.pack("<d", value) + b"\x10" + _varint(at_ms)
        out += _field(1, ts + _field(2, sample))
    return out


def snappy_block(data: bytes) -> bytes:
    """Snappy's block format with literals only: valid input for any decoder, uncompressed."""
    out = bytearray(_varint(len(data)))
    for i in range(0, len(data), 65536):
        chunk = data[i : i + 65536]
        out += bytes([61 << 2]) + struct.pack("<H", len(chunk) - 1) + chunk
    return bytes(out)


class Mimir:
    def __init__(self, binary: str, directory: Path) -> None:
        self.binary, self.dir = binary, directory
        self.http, self.grpc = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.http}"
        self.prometheus_url = f"{self.url}/prometheus"
        self.proc: subprocess.Popen[bytes] | None = None

    def _config(self) -> dict[str, object]:
        d = str(self.dir)
        ring = {"kvstore": {"store": "inmemory"}, "instance_addr": "127.0.0.1"}
        single = {**ring, "replication_factor": 1}
        return {
            "multitenancy_enabled": True,
            "usage_stats": {"enabled": False},
            "server": {
                "http_listen_address": "127.0.0.1", "http_listen_port": self.http,
                "grpc_listen_address": "127.0.0.1", "grpc_listen_port": self.grpc, "log_level": "warn",
            },
            "memberlist": {
                "bind_addr": ["127.0.0.1"], "bind_port": free_port(), "advertise_addr": "127.0.0.1",
                "join_members": [],
            },
            "distributor": {"ring": ring},
            "ingester": {"ring": {**single, "min_ready_duration": "0s", "final_sleep": "0s"}},
            "store_gateway": {"sharding_ring": single},
            "compactor": {"data_dir": f"{d}/compactor", "sharding_ring": ring},
            # what it advertises to the querier is loopback, not the host's interface
            "frontend": {"address": "127.0.0.1"},
            "ruler": {"ring": ring},
            "alertmanager": {"sharding_ring": single, "data_dir": f"{d}/alertmanager"},
            "alertmanager_storage": {"backend": "filesystem", "filesystem": {"dir": f"{d}/am-store"}},
            "overrides_exporter": {"ring": ring},
            "blocks_storage": {
                "backend": "filesystem", "filesystem": {"dir": f"{d}/blocks"},
                "tsdb": {"dir": f"{d}/tsdb"}, "bucket_store": {"sync_dir": f"{d}/tsdb-sync"},
            },
            "ruler_storage": {"backend": "filesystem", "filesystem": {"dir": f"{d}/rules"}},
        }  # fmt: skip

    def start(self) -> Mimir:
        self.dir.mkdir(parents=True, exist_ok=True)
        config = self.dir / "mimir.yaml"
        config.write_text(yaml.safe_dump(self._config()))
        with open(self.dir / "mimir.log", "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, f"-config.file={config}", "-target=all"],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.dir,  # its activity log (metrics-activity.log) goes beside its data
            )
        wait_until(self._ready, timeout=120, what=f"mimir (its log: {self.dir / 'mimir.log'})")
        return self

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(
                f"mimir exited {self.proc.returncode}: {(self.dir / 'mimir.log').read_text()[-2000:]}"
            )
        try:
            with urllib.request.urlopen(f"{self.url}/ready", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def push(self, tenant: str, series: list[tuple[dict[str, str], float]]) -> None:
        """Remote-write one sample of each series, stamped now, into ``tenant``."""
        body = snappy_block(write_request(series, int(time.time() * 1000)))
        req = urllib.request.Request(f"{self.url}/api/v1/push", data=body, method="POST")
        for k, v in {
            "Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
            "X-Prometheus-Remote-Write-Version": "0.1.0", TENANT_HEADER: tenant,
        }.items():  # fmt: skip
            req.add_header(k, v)
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status in (200, 204), r.status

    def query(self, tenant: str, promql: str) -> list[dict[str, object]]:
        import json
        import urllib.parse

        url = f"{self.prometheus_url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        req = urllib.request.Request(url, headers={TENANT_HEADER: tenant})
        with urllib.request.urlopen(req, timeout=10) as r:
            return list(json.load(r)["data"]["result"])

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
