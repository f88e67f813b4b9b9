"""`python -m polymem.server serve|token|audit|source`."""

from .cli import main

main()
