"""`python -m kubectl_squarepeg`: the same entry point as the `kubectl-squarepeg` script."""

from kubectl_squarepeg.cli.app import main

main()
