"""The certificates, keys and tokens of one localkube cluster, written into its state directory.

Owns, as files under `<state>/pki/`: a throwaway CA (`ca.crt`) and the API server's serving
certificate for 127.0.0.1, localhost and the in-cluster names and IP of the `kubernetes`
Service (`apiserver.crt`, `apiserver.key`), both made by kubesim's tls.py; the
service-account signing key (`sa.key`); and the static token file that authenticates the
admin (group system:masters), the controller manager and the scheduler (`tokens.csv`; RBAC's
default bindings know the latter two by user name). No client certificates: every client
uses a bearer token, as kubesim's do. Keys are ECDSA P-256, which the API server accepts for
serving and for signing service-account tokens (ES256), and which take milliseconds to make.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.kubesim import tls

SERVING_NAMES = ("127.0.0.1", "localhost", "kubernetes", "kubernetes.default",
                 "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")


@dataclass(frozen=True)
class Identity:
    """A user of the static token file."""

    token: str
    user: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pki:
    directory: Path
    admin: Identity
    controller_manager: Identity
    scheduler: Identity

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def service_account_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def token_file(self) -> Path:
        return self.directory / "tokens.csv"


def _private(path: Path, data: bytes) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
        handle.write(data)


def create(directory: Path, service_ip: str) -> Pki:
    """Make every certificate, key and token of a new cluster in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    material = tls.generate((*SERVING_NAMES, service_ip))
    pki = Pki(
        directory=directory,
        admin=Identity(secrets.token_hex(24), "localkube-admin", ("system:masters",)),
        controller_manager=Identity(secrets.token_hex(24), "system:kube-controller-manager"),
        scheduler=Identity(secrets.token_hex(24), "system:kube-scheduler"),
    )
    pki.ca_cert.write_bytes(material.ca_pem)
    pki.serving_cert.write_bytes(material.cert_pem)
    _private(pki.serving_key, material.key_pem)
    signing_key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption())
    _private(pki.service_account_key, signing_key)
    rows = []
    for identity in (pki.admin, pki.controller_manager, pki.scheduler):
        row = f"{identity.token},{identity.user},{identity.user}"
        if identity.groups:
            row += ',"' + ",".join(identity.groups) + '"'
        rows.append(row)
    _private(pki.token_file, ("\n".join(rows) + "\n").encode())
    return pki
