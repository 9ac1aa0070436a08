"""Throwaway certificate authorities and the certificates they sign, for both test clusters.

Owns how a test CA and a leaf certificate are built: kubesim's serving material
(tests/kubesim/tls.py) and localkube's pki directory (tests/localkube/pki.py) both make
theirs here, so that the two clusters' certificates differ only in their names and uses.
It sits above both clusters' folders: neither imports the other for it.

Keys are ECDSA P-256: made in milliseconds, and the API server accepts them for serving,
for client certificates and for signing service-account tokens (ES256). Every certificate
is valid from five minutes back (a clock a little behind the machine's still accepts it)
for VALID_DAYS.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_DAYS = 365


@dataclass(frozen=True)
class Authority:
    """A CA: its key and its self-signed certificate."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @property
    def pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return key_pem(self.key)


def name(common_name: str, organizations: Iterable[str] = ()) -> x509.Name:
    """A subject: CN, and an O for each entry (the API server reads O as the groups)."""
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o)
                        for o in organizations)])


def alt_name(host: str) -> x509.GeneralName:
    """A subject alternative name: an IP address where `host` is one, else a DNS name."""
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _validity() -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    return now, now + datetime.timedelta(days=VALID_DAYS)


def new_authority(common_name: str) -> Authority:
    """A new CA named `common_name` that may sign leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = name(common_name)
    start, end = _validity()
    certificate = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
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
    return Authority(key, certificate)


def load_authority(cert_pem: bytes, private_key_pem: bytes) -> Authority:
    """A CA written out earlier (a running cluster's `ca.crt` and `ca.key`)."""
    key = serialization.load_pem_private_key(private_key_pem, None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return Authority(key, x509.load_pem_x509_certificate(cert_pem))


def sign(authority: Authority, subject: x509.Name, usage: x509.ObjectIdentifier,
         hosts: Iterable[str] = ()) -> tuple[bytes, bytes]:
    """A new key and a certificate for it, for `usage` (server or client auth) and valid
    for `hosts` (none for a client), signed by `authority`: PEM (certificate, key)."""
    key = ec.generate_private_key(ec.SECP256R1())
    start, end = _validity()
    builder = (
        x509.CertificateBuilder().subject_name(subject)
        .issuer_name(authority.certificate.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            authority.key.public_key()), critical=False))
    alt_names = [alt_name(host) for host in hosts]
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    certificate = builder.sign(authority.key, hashes.SHA256())
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem(key)
