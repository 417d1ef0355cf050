//! Which URLs handed out by a server rkmcp may fetch: pure rules, decided without touching the
//! network. Everything that fetches a URL a server or its metadata named (`resource_metadata`,
//! `authorization_servers`, the endpoints in authorization server metadata, redirects on the
//! way) asks this module, through [`super::guarded_http`], so the rules live and are tested in
//! one place.
//!
//! The rules, given the MCP server's own URL from the config:
//! - **Scheme**: https. Plain http only when the MCP server itself is on loopback (`127.0.0.0/8`,
//!   `::1`, `localhost`) and so is the URL: nothing leaves the machine then. Any other scheme
//!   (`file:`, `javascript:`, `data:` …) is never fetched or opened.
//! - **Addresses**: an address is public, loopback, private (`10/8`, `172.16/12`, `192.168/16`,
//!   CGNAT `100.64/10`, unique-local `fc00::/7`), link-local (`169.254/16`, where cloud metadata
//!   services answer, and `fe80::/10`) or reserved (multicast, broadcast, `0/8`, `240/4`,
//!   benchmarking, Teredo, local-use NAT64). IPv4 inside IPv6 (`::ffff:a.b.c.d`, `::a.b.c.d`,
//!   NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) counts as the IPv4 address it carries.
//!   Public addresses are always allowed, reserved ones never. Loopback, private and link-local
//!   addresses are allowed only when the MCP server's URL itself names an address of **the same
//!   class** (an IP literal of that class, or `localhost` for loopback): a server on this machine
//!   may send rkmcp to its authorization server on this machine, a server on the office network
//!   to one on the office network, but neither to the other, and a server on the internet to
//!   neither. A server named by a host name counts as public whatever its name resolves to: its
//!   DNS answers are under the control of whoever runs that name, so they cannot widen what rkmcp
//!   will fetch (a rebinding name would otherwise turn the office network into a target). The
//!   unspecified addresses (`0.0.0.0`, `::`) count as loopback: connecting to them reaches this
//!   machine.
//! - **Names** are checked by the addresses they resolve to, at the moment of connecting: the
//!   guarded client resolves them itself, keeps only allowed addresses and connects to those, so
//!   a name that answers differently the second time (DNS rebinding) gains nothing. `localhost`
//!   and `*.localhost` are loopback without asking DNS (RFC 6761).
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use ipnet::IpNet;
use url::{Host, Url};

/// What kind of network an address is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Public,
    /// This machine.
    Loopback,
    /// A private network: RFC 1918, CGNAT (RFC 6598), unique-local IPv6 (RFC 4193).
    Private,
    /// The local link: `169.254.0.0/16` (cloud instance metadata lives here) and `fe80::/10`.
    LinkLocal,
    /// Multicast, broadcast and other addresses no server is reached at.
    Reserved,
}

impl AddressClass {
    /// The class in words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            AddressClass::Public => "a public address",
            AddressClass::Loopback => "a loopback address (this machine)",
            AddressClass::Private => "a private-network address",
            AddressClass::LinkLocal => {
                "a link-local address (where cloud instance metadata services answer)"
            }
            AddressClass::Reserved => "a reserved address no server is reached at",
        }
    }
}

/// Every range that is not public, with its class. The ranges do not overlap.
const RANGES: &[(&str, AddressClass)] = &[
    // RFC 1122 / RFC 4291: this machine. The unspecified addresses reach it too when connected to.
    ("127.0.0.0/8", AddressClass::Loopback),
    ("0.0.0.0/32", AddressClass::Loopback),
    ("::1/128", AddressClass::Loopback),
    ("::/128", AddressClass::Loopback),
    // RFC 1918, RFC 6598 (carrier-grade NAT), RFC 4193 (unique local).
    ("10.0.0.0/8", AddressClass::Private),
    ("172.16.0.0/12", AddressClass::Private),
    ("192.168.0.0/16", AddressClass::Private),
    ("100.64.0.0/10", AddressClass::Private),
    ("fc00::/7", AddressClass::Private),
    // RFC 3927 / RFC 4291: the local link (169.254.169.254 is the cloud metadata service).
    ("169.254.0.0/16", AddressClass::LinkLocal),
    ("fe80::/10", AddressClass::LinkLocal),
    // "This network" (RFC 1122), benchmarking (RFC 2544), multicast, 240/4 and broadcast,
    // Teredo (hides an IPv4 address), local-use NAT64 (RFC 8215), IPv6 multicast.
    ("0.0.0.0/8", AddressClass::Reserved),
    ("198.18.0.0/15", AddressClass::Reserved),
    ("224.0.0.0/4", AddressClass::Reserved),
    ("240.0.0.0/4", AddressClass::Reserved),
    ("2001::/32", AddressClass::Reserved),
    ("64:ff9b:1::/48", AddressClass::Reserved),
    ("ff00::/8", AddressClass::Reserved),
];

static NETS: LazyLock<Vec<(IpNet, AddressClass)>> = LazyLock::new(|| {
    RANGES
        .iter()
        .filter_map(|(net, class)| net.parse().ok().map(|net| (net, *class)))
        .collect()
});

/// The IPv4 address an IPv6 address carries: IPv4-mapped, IPv4-compatible, NAT64
/// (`64:ff9b::/96`) and 6to4 (`2002::/16`).
fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let low = Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7]));
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        // IPv4-compatible (deprecated), but not `::` and `::1` themselves.
        [0, 0, 0, 0, 0, 0, _, _] if !v6.is_unspecified() && !v6.is_loopback() => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))),
        _ => None,
    }
}

/// The class of an address.
pub fn classify(ip: IpAddr) -> AddressClass {
    let ip = match ip {
        IpAddr::V6(v6) => embedded_ipv4(v6).map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    NETS.iter()
        .find(|(net, _)| net.contains(&ip))
        .map_or(AddressClass::Public, |(_, class)| *class)
}

/// `localhost` and names below it: loopback by definition (RFC 6761), never asked of DNS.
pub fn is_localhost_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// The class a URL's host has without resolving it: its IP literal's, loopback for `localhost`,
/// `None` for another name.
fn literal_class(host: &Host<&str>) -> Option<AddressClass> {
    match host {
        Host::Ipv4(v4) => Some(classify(IpAddr::V4(*v4))),
        Host::Ipv6(v6) => Some(classify(IpAddr::V6(*v6))),
        Host::Domain(name) if is_localhost_name(name) => Some(AddressClass::Loopback),
        Host::Domain(_) => None,
    }
}

/// Why a URL is not fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Not a web address at all.
    Scheme(String),
    /// Plain http where only https is used.
    PlainHttp,
    /// No host to connect to.
    NoHost,
    /// The URL names an address of a class the server may not send rkmcp to.
    Address(IpAddr, AddressClass),
    /// Every address the name resolved to is of such a class.
    Resolved(Vec<(IpAddr, AddressClass)>),
}

/// A URL rkmcp refuses to fetch, and why: a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub url: String,
    pub reason: Reason,
    /// The MCP server's host, whose URL decided what is allowed.
    pub server_host: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = crate::http::printable(&self.url, 300);
        let server = &self.server_host;
        match &self.reason {
            Reason::Scheme(scheme) => write!(
                f,
                "rkmcp does not fetch or open {url}: `{}:` is not a web address (only https, or http on this machine)",
                crate::http::printable(scheme, 40)
            ),
            Reason::PlainHttp => write!(
                f,
                "rkmcp does not fetch {url}: it is plain http, and rkmcp uses https unless both the MCP server ({server}) and the URL are on this machine (loopback)"
            ),
            Reason::NoHost => write!(f, "rkmcp does not fetch {url}: it names no host"),
            Reason::Address(ip, class) => write!(
                f,
                "rkmcp does not fetch {url}: {ip} is {}, and the MCP server ({server}) is not at such an address itself",
                class.describe()
            ),
            Reason::Resolved(addresses) => {
                let list: Vec<String> = addresses
                    .iter()
                    .map(|(ip, class)| format!("{ip}, {}", class.describe()))
                    .collect();
                write!(
                    f,
                    "rkmcp does not fetch {url}: its host resolves only to addresses the MCP server ({server}) may not send rkmcp to ({})",
                    list.join("; ")
                )
            }
        }
    }
}

impl std::error::Error for Refusal {}

/// What may be fetched on behalf of one MCP server.
#[derive(Debug, Clone)]
pub struct FetchPolicy {
    server_host: String,
    /// The class of the server's own host, when its URL names one without DNS.
    server_class: AddressClass,
}

impl FetchPolicy {
    /// The policy for the MCP server at `server` (its configured URL).
    pub fn for_server(server: &Url) -> Self {
        let host = server.host();
        FetchPolicy {
            server_host: server.host_str().unwrap_or_default().to_string(),
            server_class: host
                .as_ref()
                .and_then(literal_class)
                .unwrap_or(AddressClass::Public),
        }
    }

    /// Whether an address of `class` may be connected to.
    pub fn allows_class(&self, class: AddressClass) -> bool {
        match class {
            AddressClass::Public => true,
            AddressClass::Reserved => false,
            other => other == self.server_class,
        }
    }

    fn refusal(&self, url: &str, reason: Reason) -> Refusal {
        Refusal {
            url: url.to_string(),
            reason,
            server_host: self.server_host.clone(),
        }
    }

    /// Checks what can be checked before resolving: the scheme, and the address of an IP
    /// literal or `localhost`. A host name passes here and is checked by [`Self::allowed_addresses`]
    /// when connecting.
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        let Some(host) = url.host() else {
            return Err(match url.scheme() {
                "http" | "https" => self.refusal(url.as_str(), Reason::NoHost),
                other => self.refusal(url.as_str(), Reason::Scheme(other.to_string())),
            });
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Err(self.refusal(url.as_str(), Reason::Scheme(url.scheme().to_string())));
        }
        // The address first: "169.254.169.254 is link-local" says more than "plain http".
        let class = literal_class(&host);
        match (&host, class) {
            (Host::Ipv4(v4), Some(class)) if !self.allows_class(class) => {
                return Err(self.refusal(url.as_str(), Reason::Address(IpAddr::V4(*v4), class)));
            }
            (Host::Ipv6(v6), Some(class)) if !self.allows_class(class) => {
                return Err(self.refusal(url.as_str(), Reason::Address(IpAddr::V6(*v6), class)));
            }
            (Host::Domain(_), Some(class)) if !self.allows_class(class) => {
                return Err(self.refusal(
                    url.as_str(),
                    Reason::Address(IpAddr::V4(Ipv4Addr::LOCALHOST), class),
                ));
            }
            _ => {}
        }
        let both_loopback =
            self.server_class == AddressClass::Loopback && class == Some(AddressClass::Loopback);
        if url.scheme() == "http" && !both_loopback {
            return Err(self.refusal(url.as_str(), Reason::PlainHttp));
        }
        Ok(())
    }

    /// The addresses `host` resolved to that may be connected to, in their order; a refusal
    /// naming them all when none may.
    pub fn allowed_addresses(
        &self,
        host: &str,
        resolved: &[IpAddr],
    ) -> Result<Vec<IpAddr>, Refusal> {
        let allowed: Vec<IpAddr> = resolved
            .iter()
            .copied()
            .filter(|ip| self.allows_class(classify(*ip)))
            .collect();
        if allowed.is_empty() {
            let named = resolved.iter().map(|ip| (*ip, classify(*ip))).collect();
            return Err(self.refusal(host, Reason::Resolved(named)));
        }
        Ok(allowed)
    }
}

/// An authorization URL (or device verification URL) to show a person or open in a browser:
/// only a web address, and plain http only on this machine.
pub fn check_browser_url(raw: &str) -> Result<Url, Refusal> {
    let refusal = |reason| Refusal {
        url: raw.to_string(),
        reason,
        server_host: String::new(),
    };
    let url = Url::parse(raw).map_err(|_| refusal(Reason::NoHost))?;
    match url.scheme() {
        "https" => {}
        "http" if url.host().as_ref().and_then(literal_class) == Some(AddressClass::Loopback) => {}
        "http" => return Err(refusal(Reason::PlainHttp)),
        other => return Err(refusal(Reason::Scheme(other.to_string()))),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(refusal(Reason::NoHost));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use AddressClass::*;

    #[test]
    fn addresses_are_classified() {
        let cases = [
            ("93.184.216.34", Public),
            ("2606:4700::1111", Public),
            ("192.0.2.2", Public),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("::1", Loopback),
            ("0.0.0.0", Loopback),
            ("::", Loopback),
            ("::ffff:127.0.0.1", Loopback),
            ("10.0.0.1", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("172.32.0.1", Public),
            ("192.168.1.1", Private),
            ("100.64.0.1", Private),
            ("100.127.255.255", Private),
            ("100.128.0.1", Public),
            ("fd00::2", Private),
            ("fc00::1", Private),
            ("::ffff:10.0.0.1", Private),
            ("169.254.169.254", LinkLocal),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("::ffff:169.254.169.254", LinkLocal),
            ("::169.254.169.254", LinkLocal),
            ("64:ff9b::a9fe:a9fe", LinkLocal),
            ("2002:a9fe:a9fe::1", LinkLocal),
            ("2002:0a00:0001::1", Private),
            ("0.1.2.3", Reserved),
            ("224.0.0.1", Reserved),
            ("255.255.255.255", Reserved),
            ("198.18.0.1", Reserved),
            ("2001:0::1", Reserved),
            ("ff02::1", Reserved),
        ];
        for (ip, class) in cases {
            assert_eq!(classify(ip.parse().unwrap()), class, "{ip}");
        }
    }

    fn allowed(server: &str, target: &str) -> Result<(), Reason> {
        let policy = FetchPolicy::for_server(&Url::parse(server).unwrap());
        policy
            .check_url(&Url::parse(target).unwrap())
            .map_err(|r| r.reason)
    }

    #[test]
    fn urls_handed_out_are_checked_against_the_servers_own_address() {
        let public = "https://mcp.example.com/mcp";
        let loopback = "http://127.0.0.1:8000/mcp";
        let private = "https://10.1.2.3/mcp";
        let link_local = "https://169.254.10.10/mcp";
        let ok = |s, t| assert_eq!(allowed(s, t), Ok(()), "{s} -> {t}");
        let address = |s, t| {
            assert!(
                matches!(allowed(s, t), Err(Reason::Address(..))),
                "{s} -> {t}: {:?}",
                allowed(s, t)
            )
        };
        let plain_http = |s, t| assert_eq!(allowed(s, t), Err(Reason::PlainHttp), "{s} -> {t}");
        // A public server: public https only.
        ok(
            public,
            "https://auth.example.com/.well-known/oauth-authorization-server",
        );
        ok(public, "https://93.184.216.34/token");
        plain_http(public, "http://auth.example.com/token");
        address(public, "http://169.254.169.254/latest/meta-data/");
        address(public, "https://169.254.169.254/latest/meta-data/");
        address(public, "https://[::ffff:169.254.169.254]/");
        address(public, "https://10.0.0.1/");
        address(public, "https://127.0.0.1/");
        address(public, "https://localhost:8443/");
        address(public, "https://sso.localhost/");
        address(public, "https://[fe80::1]/");
        address(public, "https://[fd00::1]/");
        address(public, "https://100.64.0.1/");
        address(public, "https://0.0.0.0/");
        // A server on this machine: loopback over http too, public over https; nothing else.
        ok(
            loopback,
            "http://127.0.0.1:9000/.well-known/openid-configuration",
        );
        ok(loopback, "http://localhost:9000/token");
        ok(loopback, "http://[::1]:9000/token");
        ok(loopback, "https://auth.example.com/");
        plain_http(loopback, "http://auth.example.com/");
        address(loopback, "http://10.0.0.1/");
        address(loopback, "http://169.254.169.254/");
        address(loopback, "https://10.0.0.1/");
        address(loopback, "https://169.254.169.254/");
        address(loopback, "https://[::ffff:169.254.169.254]/");
        // `localhost` names a server on this machine too.
        ok("http://localhost:3000/mcp", "http://127.0.0.1:9000/token");
        // A server on a private network: private and public https; never loopback or link-local.
        ok(private, "https://10.9.9.9/");
        ok(private, "https://192.168.0.5/");
        ok(private, "https://auth.example.com/");
        plain_http(private, "http://10.9.9.9/");
        plain_http(link_local, "http://169.254.10.11/");
        address(private, "https://127.0.0.1/");
        address(private, "https://169.254.169.254/");
        // A server on the local link may name the link; the reserved ranges stay closed.
        ok(link_local, "https://169.254.10.11/");
        address(link_local, "https://10.0.0.1/");
        address(loopback, "https://224.0.0.1/");
        // Not web addresses at all.
        for target in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/plain,hi",
            "ftp://auth.example.com/",
            "gopher://127.0.0.1:6379/",
        ] {
            assert!(
                matches!(allowed(loopback, target), Err(Reason::Scheme(_))),
                "{target}"
            );
        }
    }

    #[test]
    fn resolved_names_keep_only_allowed_addresses() {
        let public = FetchPolicy::for_server(&Url::parse("https://mcp.example.com/mcp").unwrap());
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // A name that resolves to the metadata service or this machine is refused, naming them.
        let refused = public
            .allowed_addresses("rebind.example", &[ip("169.254.169.254"), ip("127.0.0.1")])
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "rkmcp does not fetch rebind.example: its host resolves only to addresses the MCP server (mcp.example.com) may not send rkmcp to (169.254.169.254, a link-local address (where cloud instance metadata services answer); 127.0.0.1, a loopback address (this machine))"
        );
        // Mixed answers: only the public one is connected to.
        assert_eq!(
            public
                .allowed_addresses("mixed.example", &[ip("10.0.0.1"), ip("93.184.216.34")])
                .unwrap(),
            [ip("93.184.216.34")]
        );
        // A server named by a host name is public, whatever it resolves to.
        let named_private = FetchPolicy::for_server(&Url::parse("https://mcp.corp/mcp").unwrap());
        assert!(
            named_private
                .allowed_addresses("sso.corp", &[ip("10.0.0.9")])
                .is_err()
        );
        let loopback = FetchPolicy::for_server(&Url::parse("http://127.0.0.1:1/mcp").unwrap());
        assert!(
            loopback
                .allowed_addresses("localhost", &[ip("::1")])
                .is_ok()
        );
        assert!(
            loopback
                .allowed_addresses("corp", &[ip("192.168.1.1")])
                .is_err()
        );
    }

    #[test]
    fn browser_urls_are_web_addresses() {
        for ok in [
            "https://auth.example.com/authorize?client_id=x",
            "http://127.0.0.1:9000/auth",
            "http://localhost/auth",
        ] {
            assert!(check_browser_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "javascript:alert(document.cookie)",
            "file:///etc/passwd",
            "data:text/html,<script>x</script>",
            "vbscript:msgbox",
            "http://auth.example.com/authorize",
            "not a url",
        ] {
            assert!(check_browser_url(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_browser_url("javascript:alert(1)")
                .unwrap_err()
                .to_string(),
            "rkmcp does not fetch or open javascript:alert(1): `javascript:` is not a web address (only https, or http on this machine)"
        );
    }
}
