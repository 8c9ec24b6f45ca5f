"""Placeholder entry point until the adapter lands."""

import sys


def main() -> int:
    print("promhpa-adapter is not implemented yet", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
