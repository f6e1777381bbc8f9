"""A throwaway TLS certificate for the stand-ins, so they can be reached over HTTPS as the real APIs are."""

from __future__ import annotations

import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certificate:
    """A self-signed certificate for 127.0.0.1 (made with the ``openssl`` command) and its key."""

    cert: Path
    key: Path

    @classmethod
    def make(cls, directory: Path) -> Certificate:
        cert, key = directory / "cert.pem", directory / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"]
            + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True,
            capture_output=True,
        )
        return cls(cert, key)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """Verifies the server's certificate and name, trusting only this certificate."""
        return ssl.create_default_context(cafile=str(self.cert))
