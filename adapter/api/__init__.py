"""The metrics APIs' own vocabulary, below every other layer of the adapter: a request's
path parsed (``requests``) and the wire format of an answer (``wire``). Serving, the
providers and forwarding all speak it; it imports none of them."""
