"""The kubernetes package is imported when a client is loaded, not with ``shared.kube``.

Its configuration loaders are about a third of a process' start-up; the adapter loads its
client in a worker thread while Prometheus answers its first discovery.
"""

from __future__ import annotations

import subprocess
import sys


def test_loading_a_kubernetes_client_imports_the_kubernetes_package() -> None:
    probe = (
        "import sys\n"
        "from shared.kube.client import load\n"
        "from shared.kube.errors import KubeError\n"
        "before = 'kubernetes' in sys.modules\n"
        "try:\n"
        "    load('/nonexistent/kubeconfig')\n"
        "except KubeError as e:\n"
        "    said = 'kubeconfig /nonexistent/kubeconfig: cannot read it' in str(e)\n"
        "    print(before, 'kubernetes' in sys.modules, said)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]
