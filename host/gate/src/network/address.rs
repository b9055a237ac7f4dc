//! Which IP addresses a plugin may connect to. Pure: the send path resolves names and asks here about
//! every address before connecting to it.
//!
//! Addresses embedding an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible, NAT64
//! `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`) are judged by the IPv4 address they carry,
//! so `::ffff:127.0.0.1` is loopback.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of address an IP is, as far as outgoing requests are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// Globally routable: always allowed.
    Public,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16 (RFC 1918).
    Private,
    /// 100.64/10 (carrier-grade NAT, RFC 6598).
    SharedAddressSpace,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// fc00::/7, and the deprecated site-local fec0::/10.
    UniqueLocal,
    /// Cloud instance metadata endpoints (169.254.169.0/24, 169.254.170.2, fd00:ec2::254,
    /// 100.100.100.200): never allowed, whatever the grant says.
    Metadata,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// 224/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// Documentation, benchmarking, protocol-assignment and reserved ranges, and every IPv6 address
    /// outside global unicast 2000::/3: nothing a plugin has a reason to reach.
    Reserved,
}

impl AddressClass {
    /// Whether a plugin may connect to an address of this class. `allow_private` (the grant's
    /// `allow-private`) opens loopback, private, shared, link-local and unique-local addresses;
    /// metadata, unspecified, multicast, broadcast and reserved addresses stay closed.
    pub fn is_allowed(self, allow_private: bool) -> bool {
        match self {
            Self::Public => true,
            Self::Loopback
            | Self::Private
            | Self::SharedAddressSpace
            | Self::LinkLocal
            | Self::UniqueLocal => allow_private,
            Self::Metadata
            | Self::Unspecified
            | Self::Multicast
            | Self::Broadcast
            | Self::Reserved => false,
        }
    }

    /// Whether `allow-private` would change the answer for this class.
    pub fn is_private(self) -> bool {
        self.is_allowed(true) && !self.is_allowed(false)
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Public => "a public address",
            Self::Loopback => "a loopback address",
            Self::Private => "a private address",
            Self::SharedAddressSpace => "a carrier-grade NAT address",
            Self::LinkLocal => "a link-local address",
            Self::UniqueLocal => "a unique-local address",
            Self::Metadata => "a cloud metadata endpoint",
            Self::Unspecified => "the unspecified address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "the broadcast address",
            Self::Reserved => "a reserved address",
        })
    }
}

/// The class of `ip`.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, d] = ip.octets();
    match (a, b, c, d) {
        (169, 254, 169, _) | (169, 254, 170, 2) | (100, 100, 100, 200) => AddressClass::Metadata,
        (0, ..) => AddressClass::Unspecified,
        (127, ..) => AddressClass::Loopback,
        (10, ..) | (192, 168, ..) => AddressClass::Private,
        (172, 16..=31, ..) => AddressClass::Private,
        (100, 64..=127, ..) => AddressClass::SharedAddressSpace,
        (169, 254, ..) => AddressClass::LinkLocal,
        (255, 255, 255, 255) => AddressClass::Broadcast,
        (224..=239, ..) => AddressClass::Multicast,
        // IETF protocol assignments, TEST-NETs 1-3, benchmarking, 240/4.
        (192, 0, 0, _) | (192, 0, 2, _) | (198, 51, 100, _) | (203, 0, 113, _) => {
            AddressClass::Reserved
        }
        (198, 18..=19, ..) | (240..=255, ..) => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let s = ip.segments();
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        AddressClass::Metadata
    } else if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if s[0] & 0xff00 == 0xff00 {
        AddressClass::Multicast
    } else if s[0] & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if s[0] & 0xfe00 == 0xfc00 || s[0] & 0xffc0 == 0xfec0 {
        AddressClass::UniqueLocal
    } else if s[0] & 0xe000 != 0x2000
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || (s[0] == 0x2001 && s[1] < 0x0200)
    {
        // Outside 2000::/3, documentation 2001:db8::/32, and 2001::/23 (Teredo, ORCHID, benchmarking…).
        AddressClass::Reserved
    } else {
        AddressClass::Public
    }
}

/// The IPv4 address an IPv6 address carries, for the translation and tunnelling prefixes.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; :: and ::1 are handled as IPv6).
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(low),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(low),
        // NAT64 well-known and local-use prefixes.
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] | [0x64, 0xff9b, 1, ..] => Some(low),
        // 6to4: 2002:AABB:CCDD::/48.
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> AddressClass {
        classify(text.parse().unwrap())
    }

    #[test]
    fn classifies_the_dangerous_ranges() {
        assert_eq!(class("127.0.0.1"), AddressClass::Loopback);
        assert_eq!(class("127.255.0.9"), AddressClass::Loopback);
        assert_eq!(class("10.1.2.3"), AddressClass::Private);
        assert_eq!(class("172.31.0.1"), AddressClass::Private);
        assert_eq!(class("192.168.1.1"), AddressClass::Private);
        assert_eq!(class("169.254.1.1"), AddressClass::LinkLocal);
        assert_eq!(class("169.254.169.254"), AddressClass::Metadata);
        assert_eq!(class("fd00:ec2::254"), AddressClass::Metadata);
        assert_eq!(class("0.0.0.0"), AddressClass::Unspecified);
        assert_eq!(class("::"), AddressClass::Unspecified);
        assert_eq!(class("::1"), AddressClass::Loopback);
        assert_eq!(class("fe80::1"), AddressClass::LinkLocal);
        assert_eq!(class("fd12:3456::1"), AddressClass::UniqueLocal);
        assert_eq!(class("ff02::1"), AddressClass::Multicast);
        assert_eq!(class("239.1.1.1"), AddressClass::Multicast);
        assert_eq!(class("255.255.255.255"), AddressClass::Broadcast);
        assert_eq!(class("100.64.0.1"), AddressClass::SharedAddressSpace);
        assert_eq!(class("192.0.2.1"), AddressClass::Reserved);
        assert_eq!(class("2001:db8::1"), AddressClass::Reserved);
    }

    #[test]
    fn judges_embedded_ipv4_by_the_address_it_carries() {
        assert_eq!(class("::ffff:127.0.0.1"), AddressClass::Loopback);
        assert_eq!(class("::ffff:169.254.169.254"), AddressClass::Metadata);
        assert_eq!(class("64:ff9b::10.0.0.1"), AddressClass::Private);
        assert_eq!(class("2002:7f00:1::"), AddressClass::Loopback);
        assert_eq!(class("::ffff:93.184.216.34"), AddressClass::Public);
    }

    #[test]
    fn public_addresses_are_public() {
        assert_eq!(class("93.184.216.34"), AddressClass::Public);
        assert_eq!(
            class("2606:2800:220:1:248:1893:25c8:1946"),
            AddressClass::Public
        );
        assert_eq!(class("172.32.0.1"), AddressClass::Public);
    }

    #[test]
    fn allow_private_never_opens_metadata_or_multicast() {
        assert!(AddressClass::Loopback.is_allowed(true));
        assert!(!AddressClass::Loopback.is_allowed(false));
        assert!(!AddressClass::Metadata.is_allowed(true));
        assert!(!AddressClass::Multicast.is_allowed(true));
        assert!(!AddressClass::Unspecified.is_allowed(true));
        assert!(AddressClass::Public.is_allowed(false));
    }
}
