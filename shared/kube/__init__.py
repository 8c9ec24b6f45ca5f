"""The Kubernetes edge: the one place either process talks to the Kubernetes API.

* ``client`` -- ``Kube``: raw-path get/post/put/watch, all async, with no hidden retries;
  ``load`` builds the official client's configuration from a kubeconfig or the in-cluster
  config (the client is used for that, and for nothing else).
* ``http`` -- ``AsyncHTTP``: the one transport, sending every call (watches included) from
  the event loop over ``shared.httpclient``'s connections, with the server, CA, client
  certificate, token, proxy and TLS name the client's configuration gives.
* ``errors`` -- ``KubeError`` and its typed kinds (``NotFound``, ``Conflict``,
  ``Forbidden``, ...), built from the ``Status`` object the API server answers with, so
  callers branch on its ``reason`` and ``code``, never on message text.
* ``informer`` -- one list+watch cache with client-go-style named indexes (by namespace,
  by label) and a transform that keeps only what its reader needs.
* ``resources`` -- pure: the table of well-known resources (group, version, kind, plural,
  singular, scope) and ``GroupVersion`` parsing; the engine may use it.
* ``discovery`` -- ``RESTMapper``: kinds to resources and scale subresources through API
  discovery, the well-known table first.

Nothing outside this package imports the ``kubernetes`` client (an import contract says
so). Import from the submodules; this file imports nothing, so that importing the pure
``resources`` pulls in no I/O library.
"""
