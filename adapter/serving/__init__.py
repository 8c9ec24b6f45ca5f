"""The metrics APIs as served: the aiohttp application, authentication, probes, paths, providers,
discovery, the rule file's reloads, the wire format and the rules webhook."""
