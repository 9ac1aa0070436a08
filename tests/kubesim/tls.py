"""TLS material: a throwaway CA and a server certificate for 127.0.0.1 and localhost.

The CA and the certificate are made by tests/certs.py, as localkube's are: ECDSA P-256 keys,
generated in milliseconds, so kubesim starts in well under a second.
`TlsMaterial.server_context()` is the `ssl.SSLContext` the HTTPS server wraps connections
with; `ca_pem` goes into the kubeconfig as `certificate-authority-data`.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass

from cryptography.x509.oid import ExtendedKeyUsageOID

from tests import certs


@dataclass(frozen=True)
class TlsMaterial:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # load_cert_chain reads files only: write them to a private temporary directory.
        with tempfile.TemporaryDirectory(prefix="kubesim-tls-") as tmp:
            cert, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            with open(cert, "wb") as handle:
                handle.write(self.cert_pem + self.ca_pem)
            with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as handle:
                handle.write(self.key_pem)
            context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["http/1.1"])
        return context


def generate(hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> TlsMaterial:
    """A new CA and a server certificate signed by it, valid for a year."""
    authority = certs.new_authority("kubesim-ca")
    cert_pem, key_pem = certs.sign(authority, certs.name("kube-apiserver"),
                                   ExtendedKeyUsageOID.SERVER_AUTH, hosts)
    return TlsMaterial(ca_pem=authority.pem, cert_pem=cert_pem, key_pem=key_pem)
