"""The certificates and keys of one localkube cluster, written into its state directory.

Owns, as files under `<state>/pki/`: a throwaway CA (`ca.crt`, `ca.key`), the API server's
serving certificate for 127.0.0.1, localhost and the in-cluster names of the `kubernetes`
Service (`apiserver.crt`, `apiserver.key`), the service-account signing key (`sa.key`), and
the static token file that authenticates the admin, the controller manager and the scheduler
(`tokens.csv`). Keys are ECDSA P-256: the API server accepts them for serving and for signing
service-account tokens (ES256), and they take milliseconds to make.
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


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def _private(path: Path, data: bytes) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
        handle.write(data)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def create(directory: Path, service_ip: str) -> Pki:
    """Make every certificate, key and token of a new cluster in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    later = now + datetime.timedelta(days=365)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("localkube-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(later)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    serving_key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = []
    for host in (*SERVING_NAMES, service_ip):
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    serving = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver")).issuer_name(ca_name)
        .public_key(serving_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(later)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(
        directory=directory,
        admin=Identity(secrets.token_hex(24), "localkube-admin", ("system:masters",)),
        controller_manager=Identity(secrets.token_hex(24), "system:kube-controller-manager"),
        scheduler=Identity(secrets.token_hex(24), "system:kube-scheduler"),
    )
    pki.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _private(directory / "ca.key", _key_pem(ca_key))
    pki.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    _private(pki.serving_key, _key_pem(serving_key))
    _private(pki.service_account_key, _key_pem(ec.generate_private_key(ec.SECP256R1())))
    rows = []
    for identity in (pki.admin, pki.controller_manager, pki.scheduler):
        row = f"{identity.token},{identity.user},{identity.user}"
        if identity.groups:
            row += ',"' + ",".join(identity.groups) + '"'
        rows.append(row)
    _private(pki.token_file, ("\n".join(rows) + "\n").encode())
    return pki
