"""Values parsed as what they are, with the bounds every estate stays within: network ranges (CIDRs), addresses,
host names, HTTPS endpoints, times, node counts and money.

Every CIDR field of the schema is `Annotated[str, CidrRange(...)]` (one definition, a prefix range per field);
every address field is `IpAddress`, `HostAddress` (a server: unicast only) or `HostPort`. Values stay the text the user wrote (components hand them to
providers as strings); `gpufleet schema` shows each limit.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

MAX_NODES = 10_000  # nodes in one pool or window: more than the largest GPU clusters built so far
MAX_GPUS = 160_000  # GPUs a tenant may borrow or a window may ask for (MAX_NODES x 16 GPUs)
MAX_USD = 1e9  # a price, a budget or a booked spend, in US dollars
EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)  # burst windows and ledger entries lie between these
LATEST = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)
MAX_HOSTNAME = 253  # RFC 1035 section 2.3.4: a domain name is at most 255 octets (253 characters as text)
_LABEL = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?")  # RFC 1123 section 2.1 host name label
_TOP_LABEL = re.compile(r"[A-Za-z]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?")  # a top label is alphabetic (section 2.1)
_PORT = re.compile(r"[1-9][0-9]{0,4}")


@dataclass(frozen=True)
class CidrRange:
    """A CIDR (host bits allowed unless `strict`) whose prefix length lies in [min_prefix, max_prefix].

    IPv6 ranges are refused where `ipv4_only` (AWS subnets and VPCs gpufleet creates are IPv4).
    """

    min_prefix: int
    max_prefix: int
    ipv4_only: bool = False
    strict: bool = False

    def check(self, value: str) -> str:
        _, slash, prefix = value.partition("/")
        if slash and not re.fullmatch(r"[0-9]{1,3}", prefix):
            # ipaddress also reads `/255.255.0.0` (a netmask) and `/0.0.255.255` (a host mask); a CIDR's prefix is
            # a bit count (RFC 4632 section 3.1), and providers and NetworkPolicy ipBlocks take only that form.
            raise ValueError(f"{value!r}: the prefix after `/` must be a length such as /16, not a netmask")
        if slash and prefix != "0" and prefix.startswith("0"):
            # ipaddress reads `/016` as /16. Others do not: Go's netip.ParsePrefix refuses a leading zero
            # (golang/go#63850, citing RFC 4632 section 3.1), and C-style parsers read it as octal.
            raise ValueError(f"{value!r}: write the prefix length without a leading zero (/{int(prefix)})")
        try:
            net = ipaddress.ip_network(value, strict=self.strict)
        except ValueError as err:
            raise ValueError(f"{value!r} is not a CIDR range ({err})") from None
        if self.ipv4_only and net.version != 4:
            raise ValueError(f"{value} is IPv6; this range must be IPv4")
        if not self.min_prefix <= net.prefixlen <= self.max_prefix:
            raise ValueError(f"{value}: the prefix length must be between /{self.min_prefix} and /{self.max_prefix}")
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        out["format"] = "ipv4-cidr" if self.ipv4_only else "cidr"
        out["x-prefix-length"] = {"minimum": self.min_prefix, "maximum": self.max_prefix}
        return out


def _address(value: str) -> str:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address") from None
    return value


def _special(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why `ip` cannot be a server's address (RFC 6890 special-purpose ranges as Python's ipaddress flags them)."""
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_loopback:
        return "a loopback address (it names the machine that dials it, not the server)"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_link_local:
        return "a link-local address (not routed beyond one link)"
    if ip.version == 4 and ip == ipaddress.IPv4Address("255.255.255.255"):
        return "the limited broadcast address (RFC 919)"
    return None


def check_host(value: str) -> str:
    """A server's unicast IP address or an RFC 1123 host name.

    RFC 1123 section 2.1: the highest-level label of a host name is alphabetic, so a text that could be read as
    a number (`10.10.1`, `010.0.0.1`, `0x0a000001`, which inet_aton resolves to some other address) is neither.
    """
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        ip = None
    if ip is not None:
        why = _special(ip)
        if why:
            raise ValueError(f"{value!r} is {why}; a server needs a unicast address")
        return value
    name = value.removesuffix(".")
    if not name or len(name) > MAX_HOSTNAME or not all(_LABEL.fullmatch(part) for part in name.split(".")):
        raise ValueError(f"{value!r} is neither an IP address nor a host name")
    if name.lower() == "localhost" or name.lower().endswith(".localhost"):
        # RFC 6761 section 6.3: `localhost` and names under it resolve to the loopback address, like 127.0.0.1.
        raise ValueError(f"{value!r} is the loopback host (RFC 6761 section 6.3); a server needs a unicast address")
    if not _TOP_LABEL.fullmatch(name.rsplit(".", 1)[-1]):
        raise ValueError(
            f"{value!r} is not a host name: its last label must start with a letter (RFC 1123 section 2.1), "
            "and it is not an IP address either (write IPv4 as four decimal numbers without leading zeros)"
        )
    return value


def _host_port(value: str) -> str:
    """`host:port` with exactly one port in 1..65535; an IPv6 host in brackets (`[fd00::1]:6443`)."""
    if value.startswith("["):
        host, sep, port = value[1:].partition("]:")
        if not sep or ":" not in host:
            raise ValueError(f"{value!r}: expected [IPv6 address]:port")
    else:
        host, sep, port = value.partition(":")
        if not sep or ":" in port:
            raise ValueError(f"{value!r}: expected host:port with exactly one port (e.g. `10.0.0.10:6443`)")
    if not _PORT.fullmatch(port) or not 1 <= int(port) <= 65535:
        raise ValueError(f"{value!r}: the port {port!r} must be a number in 1..65535")
    check_host(host)
    return value


def _https_url(value: str) -> str:
    """An https:// URL with a host and, if any, a port in 1..65535 (no IPv6 zone index)."""
    try:
        url = urlsplit(value)
        port = url.port
    except ValueError as err:
        raise ValueError(f"{value!r} is not a valid URL ({err})") from None
    if url.scheme != "https" or not url.hostname:
        raise ValueError(f"{value!r} must be an https:// URL with a host")
    if port == 0:
        raise ValueError(f"{value!r}: port 0 is not a port")
    check_host(url.hostname)
    return value


def _in_time_range(value: dt.datetime) -> dt.datetime:
    """The time in UTC, checked on its wall-clock reading first: converting year 1 or 9999 across an offset
    overflows."""
    wall = value.replace(tzinfo=None)
    if not EARLIEST.replace(tzinfo=None) <= wall < LATEST.replace(tzinfo=None):
        raise ValueError(f"{value.isoformat()} is outside the years {EARLIEST:%Y}..{LATEST:%Y}")
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


IpAddress = Annotated[str, AfterValidator(_address), Field(json_schema_extra={"format": "ip-address"})]
HostAddress = Annotated[
    str,
    AfterValidator(check_host),
    Field(max_length=MAX_HOSTNAME, json_schema_extra={"format": "ip-address-or-hostname"}),
]
HostPort = Annotated[
    str,
    AfterValidator(_host_port),
    Field(max_length=MAX_HOSTNAME + 8, json_schema_extra={"format": "host-port"}),
]
HttpsUrl = Annotated[str, Field(max_length=2048, pattern=r"^https://"), AfterValidator(_https_url)]
Timestamp = Annotated[
    dt.datetime,
    AfterValidator(_in_time_range),
    Field(description=f"ISO time between {EARLIEST:%Y} and {LATEST:%Y}; UTC when it names no zone."),
]
NodeCount = Annotated[int, Field(ge=0, le=MAX_NODES)]
Usd = Annotated[float, Field(ge=0, le=MAX_USD)]
