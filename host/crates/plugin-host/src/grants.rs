//! Pure grant checks: what a user's grant allows, decided without touching the network, the
//! filesystem or the process environment. Everything that enforces a grant (the capability
//! modules under `caps/`) asks this module, so the rules live and are tested in one place.
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// A grant entry that does not parse: names the entry and says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("network grant {entry:?}: {problem}")]
pub struct PatternError {
    pub entry: String,
    pub problem: String,
}

/// The host part of a network grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// A literal address: only that address.
    Ip(IpAddr),
    /// An exact host name (lower-case, no trailing dot).
    Name(String),
    /// `*.example.com`: any name strictly below `example.com` (not `example.com` itself).
    Suffix(String),
}

/// One `host:port` entry of a network grant; `port` `None` means `*` (any port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetPattern {
    pub host: HostPattern,
    pub port: Option<u16>,
}

impl fmt::Display for NetPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HostPattern::Ip(ip) => write!(f, "{ip}")?,
            HostPattern::Name(n) => write!(f, "{n}")?,
            HostPattern::Suffix(s) => write!(f, "*.{s}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => write!(f, ":*"),
        }
    }
}

impl NetPattern {
    /// Parses `127.0.0.1:8765`, `[::1]:80`, `example.com:443`, `*.example.com:443`, `host:*`.
    /// A port is required: granting every port of a host should be written out as `:*`.
    pub fn parse(entry: &str) -> Result<Self, PatternError> {
        let err = |problem: &str| PatternError {
            entry: entry.to_string(),
            problem: problem.to_string(),
        };
        let entry_trim = entry.trim();
        let (host, port) = if let Some(rest) = entry_trim.strip_prefix('[') {
            let (ip, rest) = rest
                .split_once(']')
                .ok_or_else(|| err("missing `]` after an IPv6 address"))?;
            let port = rest
                .strip_prefix(':')
                .ok_or_else(|| err("expected `:PORT` after `]`"))?;
            let ip: IpAddr = ip.parse().map_err(|_| err("not an IPv6 address"))?;
            (HostPattern::Ip(ip), port)
        } else {
            let (host, port) = entry_trim
                .rsplit_once(':')
                .ok_or_else(|| err("expected HOST:PORT (use `:*` for any port)"))?;
            if host.contains(':') {
                return Err(err("write IPv6 addresses in brackets: [::1]:PORT"));
            }
            (parse_host(host).map_err(|p| err(&p))?, port)
        };
        let port = match port {
            "*" => None,
            p => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| err("the port must be 1-65535 or `*`"))?,
            ),
        };
        Ok(NetPattern { host, port })
    }

    fn port_matches(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }

    /// Whether a connection to `addr` is granted by this pattern's literal address. Names are
    /// matched separately (see [`NetworkPolicy::allows_resolved`]).
    pub fn allows_addr(&self, addr: SocketAddr) -> bool {
        match &self.host {
            HostPattern::Ip(ip) => same_ip(*ip, addr.ip()) && self.port_matches(addr.port()),
            _ => false,
        }
    }

    /// Whether looking up `name` is granted by this pattern.
    pub fn allows_name(&self, name: &str) -> bool {
        let name = normalize_name(name);
        match &self.host {
            HostPattern::Ip(_) => false,
            HostPattern::Name(n) => *n == name,
            HostPattern::Suffix(s) => name
                .strip_suffix(s.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

fn parse_host(host: &str) -> Result<HostPattern, String> {
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(HostPattern::Ip(ip));
    }
    let (wild, name) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    let name = normalize_name(name);
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(format!(
            "{host:?} is not an IP address, a host name or `*.domain` (a `*` is only allowed as the whole first label)"
        ));
    }
    Ok(if wild {
        HostPattern::Suffix(name)
    } else {
        HostPattern::Name(name)
    })
}

fn normalize_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// IPv4-mapped IPv6 addresses are the same host as their IPv4 form.
fn same_ip(granted: IpAddr, seen: IpAddr) -> bool {
    granted.to_canonical() == seen.to_canonical()
}

/// A plugin's whole network grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPolicy {
    pub patterns: Vec<NetPattern>,
}

impl NetworkPolicy {
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, PatternError> {
        let patterns = entries
            .iter()
            .map(|e| NetPattern::parse(e.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(NetworkPolicy { patterns })
    }

    /// No network at all: sockets stay switched off.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Name lookups are only switched on when some entry names a host.
    pub fn needs_name_lookup(&self) -> bool {
        self.patterns
            .iter()
            .any(|p| !matches!(p.host, HostPattern::Ip(_)))
    }

    pub fn allows_name(&self, name: &str) -> bool {
        self.patterns.iter().any(|p| p.allows_name(name))
    }

    /// A connection to `addr`: granted by a literal address, or because `addr` is what a granted
    /// name resolved to (`resolved` = names the plugin looked up, with their addresses) and the
    /// port matches that name's entry.
    pub fn allows_connect(&self, addr: SocketAddr, resolved: &[(String, Vec<IpAddr>)]) -> bool {
        self.patterns.iter().any(|p| {
            p.allows_addr(addr)
                || (p.port_matches(addr.port())
                    && resolved.iter().any(|(name, ips)| {
                        p.allows_name(name) && ips.iter().any(|ip| same_ip(*ip, addr.ip()))
                    }))
        })
    }

    /// The implicit bind before a connect uses the wildcard address and port 0; explicit binds
    /// to anything else (servers) are never granted.
    pub fn allows_bind(addr: SocketAddr) -> bool {
        addr.ip().is_unspecified() && addr.port() == 0
    }
}

/// The environment a plugin sees: only the granted names that are set on the host.
pub fn filter_env<F>(granted: &[String], lookup: F) -> Vec<(String, String)>
where
    F: Fn(&str) -> Option<String>,
{
    let mut out: Vec<(String, String)> = Vec::new();
    for name in granted {
        if out.iter().any(|(n, _)| n == name) {
            continue;
        }
        if let Some(value) = lookup(name) {
            out.push((name.clone(), value));
        }
    }
    out
}

/// Checks a guest path of a file grant: absolute, no `.`/`..` components, no empty components.
pub fn check_guest_path(guest: &str) -> Result<(), String> {
    if !guest.starts_with('/') {
        return Err(format!(
            "guest path {guest:?} must be absolute (start with `/`)"
        ));
    }
    if guest == "/" {
        return Ok(());
    }
    for part in guest[1..].trim_end_matches('/').split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(format!(
                "guest path {guest:?} must not contain empty, `.` or `..` components"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn literal_ip_grants_only_that_address_and_port() {
        let p = NetworkPolicy::parse(&["127.0.0.1:8765"]).unwrap();
        assert!(p.allows_connect(addr("127.0.0.1:8765"), &[]));
        assert!(!p.allows_connect(addr("127.0.0.1:8766"), &[]));
        assert!(!p.allows_connect(addr("127.0.0.2:8765"), &[]));
        assert!(p.allows_connect(addr("[::ffff:127.0.0.1]:8765"), &[]));
        assert!(!p.needs_name_lookup());
    }

    #[test]
    fn ipv6_and_any_port() {
        let p = NetworkPolicy::parse(&["[::1]:*"]).unwrap();
        assert!(p.allows_connect(addr("[::1]:1"), &[]));
        assert!(p.allows_connect(addr("[::1]:65535"), &[]));
        assert!(!p.allows_connect(addr("127.0.0.1:1"), &[]));
    }

    #[test]
    fn names_and_wildcards() {
        let p = NetworkPolicy::parse(&["*.example.com:443", "LocalHost.:8080"]).unwrap();
        assert!(p.needs_name_lookup());
        assert!(p.allows_name("api.example.com"));
        assert!(p.allows_name("a.b.EXAMPLE.com."));
        assert!(!p.allows_name("example.com"));
        assert!(!p.allows_name("evilexample.com"));
        assert!(!p.allows_name("example.com.evil.org"));
        assert!(p.allows_name("localhost"));
        let resolved = vec![(
            "api.example.com".to_string(),
            vec!["93.184.216.34".parse().unwrap()],
        )];
        assert!(p.allows_connect(addr("93.184.216.34:443"), &resolved));
        assert!(!p.allows_connect(addr("93.184.216.34:80"), &resolved));
        assert!(!p.allows_connect(addr("93.184.216.35:443"), &resolved));
        let other = vec![(
            "evil.org".to_string(),
            vec!["93.184.216.34".parse().unwrap()],
        )];
        assert!(!p.allows_connect(addr("93.184.216.34:443"), &other));
    }

    #[test]
    fn bad_entries_are_named() {
        for bad in [
            "127.0.0.1",
            "host:0",
            "host:99999",
            "::1:80",
            "*:80",
            "a.*.com:1",
            "[::1]80",
            ":80",
            "bad_host:1",
        ] {
            let e = NetPattern::parse(bad).unwrap_err();
            assert_eq!(e.entry, bad);
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "127.0.0.1:80",
            "[::1]:*",
            "example.com:443",
            "*.example.com:*",
        ] {
            assert_eq!(NetPattern::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn empty_policy_denies_everything() {
        let p = NetworkPolicy::default();
        assert!(p.is_empty());
        assert!(!p.allows_connect(addr("127.0.0.1:80"), &[]));
        assert!(!p.allows_name("localhost"));
    }

    #[test]
    fn only_implicit_binds() {
        assert!(NetworkPolicy::allows_bind(addr("0.0.0.0:0")));
        assert!(NetworkPolicy::allows_bind(addr("[::]:0")));
        assert!(!NetworkPolicy::allows_bind(addr("0.0.0.0:8080")));
        assert!(!NetworkPolicy::allows_bind(addr("127.0.0.1:0")));
    }

    #[test]
    fn env_only_granted_and_set() {
        let host = |n: &str| match n {
            "HOME" => Some("/home/u".to_string()),
            "SECRET" => Some("x".to_string()),
            _ => None,
        };
        let granted = vec!["HOME".to_string(), "UNSET".to_string(), "HOME".to_string()];
        assert_eq!(
            filter_env(&granted, host),
            vec![("HOME".into(), "/home/u".into())]
        );
        assert!(filter_env(&[], host).is_empty());
    }

    #[test]
    fn guest_paths() {
        assert!(check_guest_path("/data").is_ok());
        assert!(check_guest_path("/data/sub/").is_ok());
        assert!(check_guest_path("/").is_ok());
        assert!(check_guest_path("data").is_err());
        assert!(check_guest_path("/data/../etc").is_err());
        assert!(check_guest_path("/a//b").is_err());
        assert!(check_guest_path("/./a").is_err());
    }
}
