"""The certificates, keys and tokens of one localkube cluster, written into its state directory.

Owns, as files under `<state>/pki/`: a throwaway CA (`ca.crt`, its key `ca.key`), which is
both what clients trust for the API server and the API server's `--client-ca-file`; the API
server's serving certificate for 127.0.0.1, localhost and the in-cluster names and IP of the
`kubernetes` Service (`apiserver.crt`, `apiserver.key`); the service-account signing key
(`sa.key`); and the static token file (`tokens.csv`) that authenticates the admin (group
system:masters), the controller manager and the scheduler (RBAC's default bindings know the
latter two by user name), and `localkube-user`, a plain user RBAC grants nothing to, for the
tests of logins and of least privilege (they bind it a Role in their namespace).

Client certificates are made on demand, signed by the CA (`client_certificate`): the tests
of logins read `ca.key` from a running cluster's state directory (`directory_of`, through
the control socket's path in the kubeconfig) and log in with a certificate whose CN is the
user and whose O entries are the groups, as the API server's x509 authenticator reads them.
The CA and the certificates are made by tests/certs.py, as kubesim's are (ECDSA P-256 keys,
which the API server accepts for serving, for client certificates and for signing
service-account tokens, ES256).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests import certs

SERVING_NAMES = ("127.0.0.1", "localhost", "kubernetes", "kubernetes.default",
                 "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
PLAIN_USER = "localkube-user"


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
    user: Identity

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

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
    pki = Pki(
        directory=directory,
        admin=Identity(secrets.token_hex(24), "localkube-admin", ("system:masters",)),
        controller_manager=Identity(secrets.token_hex(24), "system:kube-controller-manager"),
        scheduler=Identity(secrets.token_hex(24), "system:kube-scheduler"),
        user=Identity(secrets.token_hex(24), PLAIN_USER),
    )
    authority = certs.new_authority("localkube-ca")
    pki.ca_cert.write_bytes(authority.pem)
    _private(pki.ca_key, authority.key_pem)
    serving_cert, serving_key = certs.sign(authority, certs.name("kube-apiserver"),
                                           ExtendedKeyUsageOID.SERVER_AUTH,
                                           (*SERVING_NAMES, service_ip))
    pki.serving_cert.write_bytes(serving_cert)
    _private(pki.serving_key, serving_key)
    signing_key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption())
    _private(pki.service_account_key, signing_key)
    rows = []
    for identity in (pki.admin, pki.controller_manager, pki.scheduler, pki.user):
        row = f"{identity.token},{identity.user},{identity.user}"
        if identity.groups:
            row += ',"' + ",".join(identity.groups) + '"'
        rows.append(row)
    _private(pki.token_file, ("\n".join(rows) + "\n").encode())
    return pki


def client_certificate(directory: Path, user: str, groups: tuple[str, ...] = (),
                       ) -> tuple[bytes, bytes]:
    """A client certificate (PEM certificate, PEM key) for `user` in `groups`, signed by the
    CA of the cluster whose pki directory is `directory`."""
    authority = certs.load_authority((directory / "ca.crt").read_bytes(),
                                     (directory / "ca.key").read_bytes())
    return certs.sign(authority, certs.name(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH)


def token_of(directory: Path, user: str) -> str:
    """The static token of `user` in the token file of the cluster whose pki directory is
    `directory`."""
    for row in (directory / "tokens.csv").read_text(encoding="utf-8").splitlines():
        token, name, *_ = row.split(",")
        if name == user:
            return token
    raise KeyError(f"{user} is not in {directory / 'tokens.csv'}")


def directory_of(control_socket: Path) -> Path:
    """The pki directory of the running cluster whose control socket is `control_socket`
    (the kubeconfig's `localkube` extension names it; both are in the state directory)."""
    return control_socket.parent / "pki"
