"""What the environment says about reaching servers, read as curl, requests and
huggingface_hub read it: the proxy for an origin (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
lower-case names too), the hosts that bypass it (`NO_PROXY`) and the CA certificates to
trust (`REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`, `SSL_CERT_FILE`). Standard library only."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from quantcheck.io.source import SourceError
from quantcheck.textsafe import redact_url

Origin = tuple[str, str, int]


class ProxySettingError(SourceError):
    """A proxy or CA bundle the environment names cannot be used."""


@dataclass(frozen=True, slots=True)
class Proxy:
    """An HTTP proxy (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`): where it is, and the
    `Proxy-Authorization` its URL's user:password give (None without)."""

    host: str
    port: int
    auth: str | None


def proxy_for(org: Origin) -> Proxy | None:
    """The proxy the environment names for `org`, as curl and requests read it: `HTTPS_PROXY`
    for https, `HTTP_PROXY` for http, else `ALL_PROXY` (lower-case names too); none for a
    host `NO_PROXY` lists. Only http:// proxies (https URLs go through them by CONNECT)."""
    from urllib.request import getproxies_environment

    scheme, host, port = org
    proxies = getproxies_environment()
    url = proxies.get(scheme) or proxies.get("all")
    if not url or bypassed(host, port, proxies.get("no", "")):
        return None
    if "://" not in url:
        url = f"http://{url}"
    parts = urlsplit(url)
    try:
        pport = parts.port or 80
    except ValueError:
        pport = -1
    if parts.scheme.lower() != "http" or not parts.hostname or pport < 0:
        raise ProxySettingError(
            f"proxy {redact_url(url)} ({scheme.upper()}_PROXY): only http://HOST[:PORT] proxies "
            "are supported"
        )
    auth = None
    if parts.username is not None:
        import base64
        from urllib.parse import unquote

        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        auth = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return Proxy(parts.hostname, pport, auth)


def bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Whether `NO_PROXY` lists the host: `*`, a name or domain suffix (`example.com`,
    `.example.com`), an address or network (`10.0.0.0/8`), each with an optional `:PORT`."""
    import ipaddress

    for entry in no_proxy.replace(" ", "").lower().split(","):
        name, _, want = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if want and want != str(port):
            continue
        name = name.strip("[]").lstrip(".")
        if entry == "*" or (name and (host == name or host.endswith(f".{name}"))):
            return True
        if "/" in name:
            try:
                if ipaddress.ip_address(host) in ipaddress.ip_network(name, strict=False):
                    return True
            except ValueError:
                continue
    return False


def ca_bundle() -> str | None:
    """The CA certificates to trust instead of the system's: `REQUESTS_CA_BUNDLE`, else
    `CURL_CA_BUNDLE`, else `SSL_CERT_FILE` (what requests and huggingface_hub read)."""
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
        value = os.environ.get(name, "").strip()
        if value:
            if not os.path.isfile(value):
                raise ProxySettingError(f"{name}={value}: no such CA bundle file")
            return value
    return None
