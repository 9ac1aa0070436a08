"""Trust of project config files: which `.squarepeg.yaml` files the user said may be used.

A project file arrives with a repository someone else wrote, and what it sets (a privileged
pod, a host path, an init container of another image) runs with the user's credentials. So
it is used only once the user has trusted it, as mise and direnv do: `config trust FILE`
records the file's real path and the SHA-256 of its contents in the user's config directory
(`$XDG_CONFIG_HOME/squarepeg/trusted.json`, default `~/.config/squarepeg/...`). A file whose
contents changed since is untrusted again. The other layers (system, user,
`$SQUAREPEG_CONFIG`, `--config`) are the user's own choice and never need trust.

Owns the store's location and format, hashing, and the verdict for one file's bytes. The
store is JSON (`{"version": 1, "files": {PATH: SHA256}}`), written to a temporary file and
renamed, so a crash never leaves half a store. Nothing here decides what a verdict means for
a run: config/files.py refuses an untrusted file, cli/app.py's `config` commands show and
change trust.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from kubectl_squarepeg.errors import ConfigError

STORE_NAME = "trusted.json"
_VERSION = 1


class Verdict(Enum):
    """What the store says about one file's current contents."""

    TRUSTED = "trusted"
    UNTRUSTED = "not trusted"
    CHANGED = "changed since trusted"


def user_config_dir(environ: Mapping[str, str], home: Path) -> Path:
    """`$XDG_CONFIG_HOME/squarepeg` when that is absolute, else `~/.config/squarepeg`."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else home / ".config") / "squarepeg"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def key_of(path: str | Path) -> str:
    """The store's key for a file: its real absolute path (a symlink is its target)."""
    return os.path.realpath(path)


@dataclass
class Store:
    """The trusted files, as loaded from (and saved to) `path`."""

    path: Path
    files: dict[str, str]

    @classmethod
    def load(cls, directory: Path) -> Store:
        path = directory / STORE_NAME
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path, {})
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot read the trust store {path}: {exc}",
                "delete it and trust your project files again with "
                "`kubectl squarepeg config trust FILE`",
            ) from None
        files = doc.get("files") if isinstance(doc, dict) else None
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()
        ):
            raise ConfigError(
                f"the trust store {path} is not squarepeg's format",
                "delete it and trust your project files again with "
                "`kubectl squarepeg config trust FILE`",
            )
        return cls(path, dict(files))

    def verdict(self, file: str | Path, data: bytes) -> Verdict:
        recorded = self.files.get(key_of(file))
        if recorded is None:
            return Verdict.UNTRUSTED
        return Verdict.TRUSTED if recorded == digest(data) else Verdict.CHANGED

    def trust(self, file: str | Path, data: bytes) -> None:
        self.files[key_of(file)] = digest(data)

    def untrust(self, file: str | Path) -> bool:
        """Forget `file`; False if it was not in the store."""
        return self.files.pop(key_of(file), None) is not None

    def save(self) -> None:
        doc = {"version": _VERSION, "files": dict(sorted(self.files.items()))}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f".{STORE_NAME}.{os.getpid()}")
            temporary.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as exc:
            raise ConfigError(
                f"cannot write the trust store {self.path}: {exc.strerror or exc}",
                "make that directory writable (it is $XDG_CONFIG_HOME/squarepeg)",
            ) from None


def refusal(file: str, verdict: Verdict) -> ConfigError:
    """The one error line of a run that found an untrusted or changed project file."""
    if verdict is Verdict.CHANGED:
        what = f"the project config file {file} changed since you trusted it"
    else:
        what = f"the project config file {file} is not trusted"
    return ConfigError(
        what,
        f"read it, then run `kubectl squarepeg config trust {file}` to use it "
        "(a project file can change what runs with your credentials)",
    )
