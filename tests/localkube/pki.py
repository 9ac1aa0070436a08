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
Keys are ECDSA P-256, which the API server accepts for serving, for client certificates and
for signing service-account tokens (ES256), and which take milliseconds to make.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVING_NAMES = ("127.0.0.1", "localhost", "kubernetes", "kubernetes.default",
                 "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
PLAIN_USER = "localkube-user"
VALID_DAYS = 365


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


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _validity() -> tuple[datetime.datetime, datetime.datetime]:
    # Five minutes back: a clock a little behind the machine's still accepts it.
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    return now, now + datetime.timedelta(days=VALID_DAYS)


def _certificate_authority() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localkube-ca")])
    start, end = _validity()
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .sign(key, hashes.SHA256()))
    return key, certificate


def _signed(ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, subject: x509.Name,
            usage: x509.ObjectIdentifier, alt_names: list[x509.GeneralName] | None = None,
            ) -> tuple[bytes, bytes]:
    """A new key and a certificate for it, signed by the CA, as PEM (certificate, key)."""
    key = ec.generate_private_key(ec.SECP256R1())
    start, end = _validity()
    builder = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False))
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    certificate = builder.sign(ca_key, hashes.SHA256())
    return certificate.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _alt_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


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
    ca_key, ca = _certificate_authority()
    pki.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _private(pki.ca_key, _key_pem(ca_key))
    serving_cert, serving_key = _signed(
        ca_key, ca, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
        ExtendedKeyUsageOID.SERVER_AUTH,
        [_alt_name(host) for host in (*SERVING_NAMES, service_ip)])
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
    ca_key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    ca = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user),
                         *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups)])
    return _signed(ca_key, ca, subject, ExtendedKeyUsageOID.CLIENT_AUTH)


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
