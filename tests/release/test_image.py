"""The image and the release as a user takes them (``release/``): two builds of one commit are
one image, runc runs it as its non-root user on a read-only root, and ``dist/`` installs
offline. Everything is built here from Debian's packages and PyPI; nothing is pushed."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
import venv
from pathlib import Path

import pytest

from localcluster.tools import Binaries
from localcluster.tools import cache_bin
from tests.support import ROOT
from tests.support import missing
from tests.support import python_m

# the first test of the module also builds the release (the dist fixture, about a minute), and
# pytest-timeout counts fixture set-up: two image builds took 119.5 s and then 120.04 s, at the
# default's edge
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
VERSION = "0.2.0"
IMAGE = f"promhpa-{VERSION}-amd64"


def tool(name: str) -> str:
    path = cache_bin() / f"{name}-debian" / name
    if not path.exists():
        missing(f"{name} is not unpacked at {path}: run `make cluster-tools` (hack/build-tools.sh image)")
    return str(path)


@pytest.fixture(scope="module")
def lock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's lock, or -- when Debian's mirror has moved past a pinned version
    since it was written -- one resolved now, said in the output: what is tested here is
    that the recipe builds, reproducibly, and runs; `make image-lock` refreshes the pins."""
    from release.debs import CACHE
    from release.debs import LOCK
    from release.debs import read_lock

    gone = []
    for deb in read_lock(LOCK):
        if not (CACHE / f"{deb.sha256}.deb").exists():
            try:
                urllib.request.urlopen(urllib.request.Request(deb.url, method="HEAD"), timeout=60).close()
            except urllib.error.HTTPError:
                gone.append(f"{deb.name} {deb.version}")
    if not gone:
        return LOCK
    print(f"release/debian.lock is stale ({', '.join(gone)}): testing with the packages of today")
    fresh = tmp_path_factory.mktemp("lock") / "debian.lock"
    made = python_m("release", "lock", "--lock", str(fresh), timeout=300)
    assert made.returncode == 0, made.stderr
    return fresh


@pytest.fixture(scope="module")
def dist(lock: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release") / "dist"
    helm = Binaries(cache_bin()).helm
    made = python_m(
        "release", "dist", VERSION, "--out", str(out), "--lock", str(lock), "--helm", helm, timeout=1200
    )
    assert made.returncode == 0, made.stdout + made.stderr
    return out


@pytest.fixture(scope="module")
def bundle(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image as a container runtime gets it: umoci reads the archive's layout and writes a
    runtime bundle (its config.json from the image's config: user, environment)."""
    work = tmp_path_factory.mktemp("bundle")
    with tarfile.open(dist / f"{IMAGE}.oci.tar") as tar:
        tar.extractall(work / "layout", filter="data")
    subprocess.run([tool("umoci"), "unpack", "--image", f"{work / 'layout'}:{VERSION}", str(work / "bundle")],
                   check=True, capture_output=True)  # fmt: skip
    return work / "bundle"


def run_in_image(bundle: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``argv`` in the image under runc, as the chart runs it: the image's user, a read-only
    root, a writable /tmp (the chart's emptyDir), no network but loopback."""
    if os.geteuid() != 0:
        missing("runc runs containers as root here: run the tests as root")
    config = json.loads((bundle / "config.json").read_text())
    config["process"]["args"] = list(argv)
    config["process"]["terminal"] = False
    config["root"]["readonly"] = True
    config["mounts"].append(
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]}
    )
    (bundle / "config.json").write_text(json.dumps(config))
    name = f"promhpa-test-{os.getpid()}-{abs(hash(argv)) % 10**6}"
    return subprocess.run([tool("runc"), "run", "--bundle", str(bundle), name],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def test_two_builds_of_one_commit_are_one_image(dist: Path, lock: Path, tmp_path: Path) -> None:
    """The second build is of another clone of the commit, in another place: nothing of the
    checkout's path or state reaches the image."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                    capture_output=True, check=True).stdout.strip()], cwd=clone, check=True)  # fmt: skip
    again = subprocess.run(
        [sys.executable, "-m", "release", "image", "--version", VERSION, "--out", str(tmp_path / "out"),
         "--lock", str(lock)],
        cwd=clone, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    first, second = dist / f"{IMAGE}.oci.tar", tmp_path / "out" / f"{IMAGE}.oci.tar"
    assert hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()
    assert (dist / f"{IMAGE}.sbom.cdx.json").read_text() == (
        tmp_path / "out" / f"{IMAGE}.sbom.cdx.json"
    ).read_text()
    assert "digest sha256:" in again.stdout


@pytest.mark.parametrize("command", ["promhpa-adapter", "promhpa-controller"])
def test_each_command_answers_in_the_image(bundle: Path, command: str) -> None:
    out = run_in_image(bundle, command, "--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{command} {VERSION}"


@pytest.mark.parametrize("command", ["promhpa-adapter", "promhpa-controller", "kubectl-promhpa"])
def test_each_command_starts_nothing_when_a_spawned_child_imports_it(bundle: Path, command: str) -> None:
    """multiprocessing's spawn runs the parent's main script again, as ``__mp_main__``, in
    each child (the adapter's probe process and rule judges): the script must then define
    and start nothing, or the child starts a second server on the parent's ports."""
    script = f"/usr/local/bin/{command}"
    probe = f"import runpy; runpy.run_path({script!r}, run_name='__mp_main__'); print('imported')"
    out = run_in_image(bundle, "python3.11", "-c", probe)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "imported"


def test_the_image_runs_as_its_user_on_a_read_only_root_with_what_it_imports(bundle: Path) -> None:
    probe = (
        "import os, ssl, adapter.server, controller.live.runner, kubernetes.client, kubernetes.stream; "
        "print(os.getuid(), os.getgid(), ssl.get_default_verify_paths().cafile)\n"
        "try:\n    open('/etc/written', 'w')\nexcept OSError as e:\n    print(e.strerror)\n"
        "open('/tmp/written', 'w').write('ok')"
    )
    out = run_in_image(bundle, "python3.11", "-c", probe)
    assert out.returncode == 0, out.stderr
    uid_gid_ca, refused = out.stdout.splitlines()
    assert uid_gid_ca == "65532 65532 /usr/lib/ssl/cert.pem"
    assert refused == "Read-only file system"


def test_the_cloud_credential_libraries_load_what_their_chains_use(bundle: Path) -> None:
    """The clouds' credential paths as a pod uses them, offline: botocore's clients for the
    AWS credential chain (the image keeps only their service models), google-auth's
    metadata and key-file credentials, azure-identity's Workload Identity and managed identity
    credentials."""
    probe = (
        "import botocore.session, google.auth.compute_engine, google.oauth2.service_account, azure.identity\n"
        "s = botocore.session.get_session()\n"
        "k = {'aws_access_key_id': 'k', 'aws_secret_access_key': 's'}\n"
        "for name in ('sts', 'sso', 'sso-oidc', 'signin'):\n"
        "    s.create_client(name, region_name='us-west-2', **k)\n"
        "azure.identity.ManagedIdentityCredential()\n"
        "azure.identity.WorkloadIdentityCredential(tenant_id='t', client_id='c', token_file_path='/tmp/t')\n"
        "print(sorted(s.get_available_services()))"
    )
    out = run_in_image(bundle, "python3.11", "-c", probe)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['signin', 'sso', 'sso-oidc', 'sts']"


def test_the_image_holds_no_shell_or_package_manager(bundle: Path) -> None:
    root = bundle / "rootfs"
    present = [p for p in ("bin/sh", "bin/bash", "usr/bin/dpkg", "usr/bin/apt", "usr/bin/gcc", "usr/bin/pip")
               if (root / p).exists()]  # fmt: skip
    assert present == []
    assert (root / "etc/ssl/certs/ca-certificates.crt").stat().st_size > 100_000  # Mozilla's CAs


def test_the_sbom_lists_the_debian_and_python_packages(dist: Path) -> None:
    bom = json.loads((dist / f"{IMAGE}.sbom.cdx.json").read_text())
    purls = {c["purl"] for c in bom["components"]}
    assert any(p.startswith("pkg:deb/debian/python3.11-minimal@") for p in purls)
    assert any(p.startswith("pkg:deb/debian/libssl3@") for p in purls)
    assert f"pkg:pypi/promhpa@{VERSION}" in purls
    assert any(p.startswith("pkg:pypi/kubernetes@") for p in purls)
    assert bom["metadata"]["component"]["version"] == VERSION


def test_every_file_of_the_release_is_in_its_checksums(dist: Path) -> None:
    listed = dict(reversed(line.split("  ", 1)) for line in (dist / "SHA256SUMS").read_text().splitlines())
    files = {
        p.relative_to(dist).as_posix() for p in dist.rglob("*") if p.is_file() and p.name != "SHA256SUMS"
    }
    assert set(listed) == files
    assert {
        f"promhpa-{VERSION}-py3-none-any.whl",
        f"promhpa-{VERSION}.tar.gz",
        f"promhpa-{VERSION}.tgz",
    } <= files
    for name, digest in listed.items():
        assert hashlib.sha256((dist / name).read_bytes()).hexdigest() == digest, name


def test_the_charts_default_image_tag_is_the_release(dist: Path) -> None:
    with tarfile.open(dist / f"promhpa-{VERSION}.tgz") as tar:
        chart = tar.extractfile("promhpa/Chart.yaml")
        assert chart is not None
        text = chart.read().decode()
    assert f"version: {VERSION}" in text
    assert f"appVersion: {VERSION}" in text  # the image tag when image.tag is unset


def test_the_wheel_installs_offline_from_dist_and_its_commands_run(dist: Path, tmp_path: Path) -> None:
    venv.create(tmp_path / "v", with_pip=True)
    pip = [
        str(tmp_path / "v/bin/python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--no-index",
        "--find-links",
        str(dist / "wheels"),
    ]
    installed = subprocess.run([*pip, str(dist / f"promhpa-{VERSION}-py3-none-any.whl")],
                               capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    for command in ("promhpa-adapter", "promhpa-controller"):
        out = subprocess.run([str(tmp_path / "v/bin" / command), "--version"], capture_output=True, text=True,
                             timeout=60, check=False)  # fmt: skip
        assert out.stdout.strip() == f"{command} {VERSION}", out.stderr
