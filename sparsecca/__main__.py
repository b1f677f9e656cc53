"""``python -m sparsecca``: the same command as the ``sparsecca`` console script."""

from sparsecca.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
