# One image for both processes: `promhpa-adapter` and `promhpa-controller run`.
# The build stage makes wheels of promhpa and of every dependency at the version the tests
# ran with (constraints.txt) -- it is the only place with pip's build machinery; the
# runtime stage installs them into a virtualenv and keeps no compilers, no pip cache, no
# shell tools beyond the slim base, and runs as an unprivileged user.
#   docker build -t promhpa:dev .
FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY adapter ./adapter
COPY controller ./controller
COPY shared ./shared
COPY rules ./rules
COPY promclient ./promclient
RUN python -m venv /opt/promhpa \
 && /opt/promhpa/bin/pip install --upgrade pip \
 && /opt/promhpa/bin/pip wheel --constraint constraints.txt --wheel-dir /wheels . \
 && /opt/promhpa/bin/pip install --no-index --find-links /wheels promhpa \
 && /opt/promhpa/bin/pip uninstall -y pip setuptools wheel

FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="promhpa" \
      org.opencontainers.image.description="Prometheus metrics adapter and HPA controller for Kubernetes" \
      org.opencontainers.image.licenses="Apache-2.0"
# no bytecode writes (the root file system is read-only in the chart), unbuffered logs, and
# a writable HOME (/tmp is an emptyDir in the chart)
ENV PATH=/opt/promhpa/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp
COPY --from=build /opt/promhpa /opt/promhpa
# the base image's pip is not needed at run time
RUN python -m pip uninstall -y pip setuptools wheel 2>/dev/null; \
    groupadd --gid 65532 promhpa && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin promhpa
USER 65532:65532
WORKDIR /tmp
# the adapter's HTTPS port and the controller's /metrics
EXPOSE 6443 10258
ENTRYPOINT []
CMD ["promhpa-adapter", "--help"]
