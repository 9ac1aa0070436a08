"""`config view`, `config trust` and `config untrust` from their arguments to their exit
code: each the one call its command makes.

Owns which file a command without FILE means (the project file `run` would find from the
working directory, config/files.py), reading it for its digest, and the user's trust store
(config/trust.py) being loaded and saved; `config view` prints the merged configuration
(config/view.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.prepare.environment import Environment

if TYPE_CHECKING:
    from kubectl_squarepeg.terminal.console import Console


def view(show_origin: bool, config: tuple[str, ...], env: Environment) -> int:
    """The merged configuration as YAML, after the files it came from; a project file that
    is not trusted is listed, and left out of the merge."""
    from kubectl_squarepeg.config.files import load
    from kubectl_squarepeg.config.view import view_text

    merged = load(explicit=config, environ=env.environ, cwd=env.cwd, skip_untrusted=True)
    sys.stdout.write(view_text(merged, show_origin=show_origin))
    return 0


def trust(file: str | None, env: Environment, console: Console) -> int:
    """Trust FILE (default: the nearest .squarepeg.yaml) as it is now."""
    path = _project_file_argument(file, env)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(
            f"cannot read {path}: {exc.strerror or exc}", "give the path of a config file"
        ) from None
    store = _trust_store(env)
    store.trust(path, data)
    store.save()
    console.status(f"trusted {os.path.realpath(path)} as it is now")
    return 0


def untrust(file: str | None, env: Environment, console: Console) -> int:
    """Stop trusting FILE (default: the nearest .squarepeg.yaml)."""
    path = _project_file_argument(file, env)
    store = _trust_store(env)
    if store.untrust(path):
        store.save()
        console.status(f"no longer trusted: {os.path.realpath(path)}")
    else:
        console.status(f"{os.path.realpath(path)} was not trusted; nothing to do")
    return 0


def _project_file_argument(file: str | None, env: Environment) -> str:
    """FILE as given, or the project file `run` would find from the working directory."""
    from kubectl_squarepeg.config.files import PROJECT_FILE, find_project_file

    if file is not None:
        return file
    found = find_project_file(env.cwd or Path.cwd())
    if found is None:
        raise UsageError(
            f"no {PROJECT_FILE} in this directory or above it",
            "give the file to trust: `kubectl squarepeg config trust FILE`",
        )
    return str(found)


def _trust_store(env: Environment) -> Any:
    from kubectl_squarepeg.config import trust as trusted

    return trusted.Store.load(trusted.user_config_dir(env.environ, Path.home()))
