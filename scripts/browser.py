"""A Chromium for the browser tests (tests/ui), found or installed: prints its executable's path.

    python scripts/browser.py            # find one, else install one; print the path
    python scripts/browser.py --find     # only look (exit status 1 if there is none)

`playwright install` downloads from a host these machines cannot reach, so the tests drive a
Chromium from elsewhere, in this order:

1. `$POLYMEM_CHROMIUM`, if set;
2. a Chromium on the PATH (Debian's `chromium`) or unpacked earlier into the cache;
3. Debian's package, `apt-get install -y chromium`, when running as root with apt-get;
4. the npm package `@sparticuz/chromium` (a headless Chromium, brotli-compressed, with the
   libraries it needs): `npm install` into `~/.cache/polymem/chromium` (or
   `$POLYMEM_BROWSER_CACHE`), unpacked there, started through a small wrapper script that adds
   its libraries to `LD_LIBRARY_PATH` where the system lacks them.

The Makefile's `test` target runs this first and hands the path to pytest as `POLYMEM_CHROMIUM`;
tests/ui/conftest.py calls `find()` itself when the variable is not set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

NPM_PACKAGE = "@sparticuz/chromium"
ON_PATH = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# node decompresses (brotli is in its standard library, not in Python's).
_UNBROTLI = ("const z = require('zlib'), f = require('fs');"
             "f.writeFileSync(process.argv[2], z.brotliDecompressSync(f.readFileSync(process.argv[1])));")


def cache_dir() -> Path:
    return Path(os.environ.get("POLYMEM_BROWSER_CACHE") or Path.home() / ".cache" / "polymem" / "chromium")


def _works(executable: str) -> bool:
    try:
        done = subprocess.run([executable, "--headless", "--no-sandbox", "--version"], capture_output=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and b"Chrom" in done.stdout


def find() -> str | None:
    """A working Chromium already on this machine (steps 1 and 2), or None."""
    named = os.environ.get("POLYMEM_CHROMIUM")
    if named:
        return named
    candidates = [shutil.which(name) for name in ON_PATH] + [str(cache_dir() / "chromium")]
    return next((c for c in candidates if c and Path(c).exists() and _works(c)), None)


def install_debian() -> str | None:
    """Debian's chromium, when this process may install packages (root, apt-get)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        if subprocess.run(command, env=env, capture_output=True, check=False).returncode != 0:
            return None
    found = shutil.which("chromium")
    return found if found and _works(found) else None


def _unbrotli(source: Path, target: Path) -> None:
    subprocess.run(["node", "-e", _UNBROTLI, str(source), str(target)], check=True)


def install_npm() -> str | None:
    """@sparticuz/chromium from the npm registry, unpacked into the cache, behind a wrapper script."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return None
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(cache / "npm"),
                    NPM_PACKAGE], check=True)
    packed = cache / "npm" / "node_modules" / "@sparticuz" / "chromium" / "bin"
    binary = cache / "chromium-bin"
    _unbrotli(packed / "chromium.br", binary)
    binary.chmod(0o755)
    for archive in sorted(packed.glob("*.tar.br")):
        tarball = cache / archive.name.removesuffix(".br")
        _unbrotli(archive, tarball)
        with tarfile.open(tarball) as tar:
            tar.extractall(cache / archive.name.removesuffix(".tar.br"), filter="data")
        tarball.unlink()
    missing = b"not found" in subprocess.run(["ldd", str(binary)], capture_output=True, check=False).stdout
    libraries = [str(p) for p in (cache / "al2023").rglob("lib") if p.is_dir()] if missing else []
    wrapper = cache / "chromium"
    wrapper.write_text("#!/bin/sh\n"
                       + (f'export LD_LIBRARY_PATH="{":".join(libraries)}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"\n'
                          if libraries else "")
                       + f'exec "{binary}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper) if _works(str(wrapper)) else None


def ensure() -> str:
    """A Chromium's executable: found, else installed (see the module docstring)."""
    found = find() or install_debian() or install_npm()
    if found is None:
        raise SystemExit("no Chromium: install Debian's `chromium`, or node and npm (for @sparticuz/chromium), "
                         "or set POLYMEM_CHROMIUM to a Chromium executable")
    return found


def main(argv: list[str]) -> int:
    if "--find" in argv:
        found = find()
        if found is None:
            return 1
        print(found)
        return 0
    print(ensure())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
