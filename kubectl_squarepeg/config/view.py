"""`config view`: the merged configuration as YAML, after the files it came from."""

from __future__ import annotations

from kubectl_squarepeg.config.merge import Config
from kubectl_squarepeg.config.records import DEFAULT, OriginPath
from kubectl_squarepeg.config.validate import canonical_segment


def view_text(config: Config, *, show_origin: bool = False) -> str:
    """`config view`: the merged configuration as YAML, after comment lines naming every
    config file found (with a project file's trust); with `show_origin`, each value's origin
    (FILE:LINE, or default) as a comment at the end of its line."""
    from kubectl_squarepeg.plan import yamlout

    def comment(path: OriginPath) -> str:
        return str(config.origin_of(*path) or DEFAULT)

    header = "".join(
        f"# {line}\n"
        for line in (
            "config files, lowest precedence first:" if config.found else "no config files",
            *(f"  {found.describe()}" for found in config.found),
        )
    )
    return header + yamlout.dump(
        config.display,
        comment=comment if show_origin else None,
        segment=lambda items, index: canonical_segment(list(items), index),
    )
