//! Which `Host` values the HTTP server answers: the authority syntax it accepts and the
//! `server.allowed-hosts` entries it compares them with. Pure parsing and matching; the server's
//! guard applies them to every request, and loopback is allowed there, not here.
//!
//! The list exists against DNS rebinding: a page on the attacker's site whose name is made to
//! resolve to the daemon sends that name as `Host`. So a name entry (`tools.internal`,
//! `box:9000`) matches exactly, and a range entry (`10.0.0.0/8`, `fd00::/8`) matches only a `Host`
//! that is an IP literal inside it, on any port: a rebound request never carries an IP literal,
//! since its page was loaded by name, while a scraper or a kubelet addressing a pod by its IP does.
//! A name never matches a range, however it begins (`10.1.2.3.evil.com`).

use std::net::IpAddr;

use http::uri::Authority;

/// A `host[:port]`, the host lowercased and without the brackets of an IPv6 literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    /// The name or IP literal.
    pub host: String,
    /// The port, when one was written.
    pub port: Option<u16>,
}

/// Why an authority (`host[:port]`) was not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadAuthority {
    /// Not an authority at all, or one with user information.
    #[error("not a host or host:port")]
    Syntax,
    /// A port that is not a number (`127.0.0.1:8750.evil.com`), or an empty one: the `http` crate
    /// then reports no port, and the host before it would pass for the whole.
    #[error("the port must be a number from 0 to 65535")]
    Port,
}

/// Split `text` into host and port, strictly: no user information, a numeric port.
pub fn parse_authority(text: &str) -> Result<HostPort, BadAuthority> {
    let a = Authority::try_from(text.trim()).map_err(|_| BadAuthority::Syntax)?;
    if a.as_str().contains('@') {
        return Err(BadAuthority::Syntax);
    }
    Ok(HostPort {
        host: normalize_host(a.host()),
        port: strict_port(&a)?,
    })
}

/// The port of `a`, if any: digits only, at most 65535.
pub fn strict_port(a: &Authority) -> Result<Option<u16>, BadAuthority> {
    let rest = a.as_str().get(a.host().len()..).unwrap_or_default();
    let Some(digits) = rest.strip_prefix(':') else {
        return if rest.is_empty() {
            Ok(None)
        } else {
            Err(BadAuthority::Port)
        };
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BadAuthority::Port);
    }
    digits.parse().map(Some).map_err(|_| BadAuthority::Port)
}

/// `host` lowercased, without the brackets of an IPv6 literal.
pub fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// One `server.allowed-hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHost {
    /// This name or IP literal exactly; on any port unless one is given.
    Name(HostPort),
    /// IP literals inside this range, on any port.
    Range(IpRange),
}

/// Why a `server.allowed-hosts` entry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostEntryError {
    /// A name entry that is not `host[:port]`.
    #[error("{0}")]
    Name(#[from] BadAuthority),
    /// A range whose address part is not an IP address.
    #[error(
        "{0:?} is not an IP address: a range is ADDRESS/BITS, e.g. 10.0.0.0/8 or fd00::/8 (no brackets)"
    )]
    Address(String),
    /// A range whose prefix is not a number of bits the address has.
    #[error(
        "{0:?} is not a prefix length: a range is ADDRESS/BITS (at most 32 for IPv4, 128 for IPv6) and matches any port"
    )]
    Prefix(String),
    /// A range with address bits set beyond its prefix: probably a typo for another range.
    #[error("{written} has address bits set beyond its prefix; write {network}")]
    HostBits {
        /// The entry as written.
        written: String,
        /// The range it probably means.
        network: String,
    },
}

impl AllowedHost {
    /// Read one entry: `ADDRESS/BITS` is a range, anything else a `host[:port]`.
    pub fn parse(entry: &str) -> Result<Self, HostEntryError> {
        let entry = entry.trim();
        if entry.contains('/') {
            IpRange::parse(entry).map(Self::Range)
        } else {
            Ok(Self::Name(parse_authority(entry)?))
        }
    }

    /// Whether a request's `Host` (as [`parse_authority`] read it) is this entry's.
    pub fn matches(&self, host: &HostPort) -> bool {
        match self {
            Self::Name(name) => {
                name.host == host.host && name.port.is_none_or(|p| Some(p) == host.port)
            }
            // Only a literal: `IpAddr`'s parser takes dotted decimal and RFC 4291 text alone, not
            // `10.1.2.3.evil.com`, hex, octal or shortened forms.
            Self::Range(range) => host
                .host
                .parse::<IpAddr>()
                .is_ok_and(|ip| range.contains(ip)),
        }
    }
}

/// A CIDR range of IPv4 or IPv6 addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    network: IpAddr,
    prefix: u8,
}

impl IpRange {
    /// Read `ADDRESS/BITS`; the address must have no bits set beyond the prefix.
    pub fn parse(text: &str) -> Result<Self, HostEntryError> {
        let (address, bits) = text.split_once('/').unwrap_or((text, ""));
        let network: IpAddr = address
            .parse()
            .map_err(|_| HostEntryError::Address(address.to_string()))?;
        let prefix = bits
            .parse::<u8>()
            .ok()
            .filter(|p| bits.bytes().all(|b| b.is_ascii_digit()) && *p <= width(network))
            .ok_or_else(|| HostEntryError::Prefix(bits.to_string()))?;
        let range = Self { network, prefix };
        let (value, _) = as_bits(network);
        if value & !range.mask() != 0 {
            let network = match network {
                IpAddr::V4(_) => IpAddr::from(std::net::Ipv4Addr::from(
                    u32::try_from(value & range.mask()).unwrap_or_default(),
                )),
                IpAddr::V6(_) => IpAddr::from(std::net::Ipv6Addr::from(value & range.mask())),
            };
            return Err(HostEntryError::HostBits {
                written: text.to_string(),
                network: format!("{network}/{prefix}"),
            });
        }
        Ok(range)
    }

    /// Whether `ip` is inside: same family, same leading `prefix` bits.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let (network, family) = as_bits(self.network);
        let (address, other) = as_bits(ip);
        family == other && (network ^ address) & self.mask() == 0
    }

    /// The prefix's bits set, in the address's width.
    fn mask(&self) -> u128 {
        let width = width(self.network);
        let ones = u128::MAX
            .checked_shl(u32::from(width - self.prefix))
            .unwrap_or(0);
        ones & (u128::MAX >> (128 - u32::from(width)))
    }
}

impl std::fmt::Display for IpRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

fn width(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// The address as a number, and its family's width.
fn as_bits(ip: IpAddr) -> (u128, u8) {
    match ip {
        IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
        IpAddr::V6(a) => (u128::from(a), 128),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(text: &str) -> IpRange {
        IpRange::parse(text).unwrap()
    }

    #[test]
    fn a_range_holds_the_addresses_of_its_prefix() {
        let ten = range("10.0.0.0/8");
        assert!(ten.contains("10.0.0.0".parse().unwrap()));
        assert!(ten.contains("10.255.255.255".parse().unwrap()));
        assert!(!ten.contains("11.0.0.0".parse().unwrap()));
        assert!(!ten.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(range("0.0.0.0/0").contains("203.0.113.9".parse().unwrap()));
        assert!(!range("0.0.0.0/0").contains("::1".parse().unwrap()));
        let one = range("10.1.2.3/32");
        assert!(one.contains("10.1.2.3".parse().unwrap()));
        assert!(!one.contains("10.1.2.4".parse().unwrap()));
        let ula = range("fd00::/8");
        assert!(ula.contains("fdff:ffff::1".parse().unwrap()));
        assert!(!ula.contains("fe00::1".parse().unwrap()));
        assert!(range("::/0").contains("2001:db8::1".parse().unwrap()));
        assert!(range("2001:db8::1/128").contains("2001:db8::1".parse().unwrap()));
        assert_eq!(ten.to_string(), "10.0.0.0/8");
    }

    #[test]
    fn a_range_with_host_bits_names_the_range_it_probably_means() {
        assert_eq!(
            IpRange::parse("10.1.2.3/8").unwrap_err().to_string(),
            "10.1.2.3/8 has address bits set beyond its prefix; write 10.0.0.0/8"
        );
        assert!(
            IpRange::parse("fd00::1/8")
                .unwrap_err()
                .to_string()
                .ends_with("write fd00::/8")
        );
    }

    #[test]
    fn only_an_ip_literal_matches_a_range() {
        let all = AllowedHost::parse("0.0.0.0/0").unwrap();
        let host = |text| parse_authority(text).unwrap();
        assert!(all.matches(&host("10.1.2.3:8750")));
        for name in ["10.1.2.3.evil.com", "0x0a010203", "167772163", "010.1.2.3"] {
            assert!(!all.matches(&host(name)), "{name}");
        }
    }
}
