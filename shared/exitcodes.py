"""Every console tool's exit codes, one meaning each (docs/cli.md has the table).

* 0: done, every check passed;
* 1: a check failed, or something the tool depends on failed at run time (the cluster or
  Prometheus did not answer, a rule can never work);
* 2: the input is unusable: a usage error, a malformed file, a kubeconfig that cannot be
  read. Fix the command line or the file;
* 130, 143: interrupted (SIGINT) or terminated (SIGTERM); 141: the reader of the output
  went away (SIGPIPE). See ``shared.entry``.
"""

from __future__ import annotations

from shared.kube.errors import KubeconfigError

OK, FAILED, USAGE = 0, 1, 2


def for_error(e: BaseException) -> int:
    """USAGE for an error in what the user gave (its cause too), else FAILED."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, KubeconfigError) or getattr(seen, "usage", False):
            return USAGE
        seen = seen.__cause__
    return FAILED
