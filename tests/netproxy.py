"""A TCP proxy on 127.0.0.1 for network conditions a test must cause for real.

It forwards bytes between a client and one upstream (a real kube-apiserver, a real
Prometheus) and can make the path between them behave as networks do: ``delay`` holds each
answer for a while (a slow link), ``freeze`` stops forwarding in both directions and leaves
every connection open (a partition: the peers hear nothing and no one closes), ``thaw``
resets the frozen connections and forwards again (the partition heals). What goes through
is not read or changed: TLS stays end to end.

With ``connect=True`` it is an HTTP proxy as a kubeconfig's proxy-url names one: each
connection starts with ``CONNECT host:port``, which it records (``connects``, with the
request's headers) and answers 200 for its own upstream only, 403 for anything else.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from localcluster import free_port


class Proxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1", connect: bool = False) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.connect = connect
        self.connects: list[tuple[str, dict[str, str]]] = []  # (CONNECT target, its headers)
        self.port = free_port()
        self.delay = 0.0  # seconds each upstream answer chunk is held before it is passed on
        # requests waiting for their answer now, and the most at once (a connection whose
        # client has sent bytes the upstream has not answered yet counts as one)
        self.pending = 0
        self.most_pending = 0
        self._frozen = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.settimeout(0.2)
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    def freeze(self) -> None:
        self._frozen.set()

    def thaw(self) -> None:
        """Reset every connection made or held while frozen, then forward again."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    s.close()
        self._frozen.clear()

    def close(self) -> None:
        self._closed.set()
        self._frozen.clear()
        self._listener.close()
        self.thaw()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.connect and not self._tunnel(client):
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._pairs.append((client, upstream))
            waiting = [False]  # this connection's client awaits an answer
            threading.Thread(target=self._pump, args=(client, upstream, False, waiting), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True, waiting), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> bool:
        """Read the CONNECT; answer it; whether to forward."""
        client.settimeout(5)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                data = client.recv(4096)
                if not data:
                    return False
                head += data
            lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            method, target, _ = [*lines[0].split(" "), "", ""][:3]
            headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
            self.connects.append((target, headers))
            mine = target in (f"{self.upstream[0]}:{self.upstream[1]}", f"localhost:{self.upstream[1]}")
            if method != "CONNECT" or not mine:
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                return False
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        except OSError:
            return False
        client.settimeout(None)
        return True

    def _mark(self, waiting: list[bool], now: bool) -> None:
        with self._lock:
            if waiting[0] != now:
                waiting[0] = now
                self.pending += 1 if now else -1
                self.most_pending = max(self.most_pending, self.pending)

    def _pump(self, src: socket.socket, dst: socket.socket, answers: bool, waiting: list[bool]) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if not answers:
                    self._mark(waiting, True)
                while self._frozen.is_set() and not self._closed.is_set():
                    time.sleep(0.05)  # held: neither side hears anything
                if answers and self.delay:
                    time.sleep(self.delay)
                dst.sendall(data)
                if answers:
                    self._mark(waiting, False)
        except OSError:
            pass
        finally:
            self._mark(waiting, False)
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
