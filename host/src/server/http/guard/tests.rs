//! The guard's checks, header by header.

use std::time::Duration;

use axum::http::HeaderValue;

use super::*;

fn config(hosts: &[&str], origins: &[&str], token: Option<&str>) -> ServerConfig {
    ServerConfig {
        http: "127.0.0.1:0".parse().unwrap(),
        allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
        allowed_hosts: hosts
            .iter()
            .map(|h| AllowedHost::parse(h).unwrap())
            .collect(),
        short_list: Vec::new(),
        token: token.map(str::to_string),
        max_body_bytes: 1024,
        request_timeout: Duration::from_secs(1),
        approval_timeout: Duration::from_secs(1),
        read_timeout: Duration::from_secs(1),
        max_connections: 1,
        max_concurrent_calls: 1,
        shutdown_grace: Duration::from_secs(1),
        state_key: None,
    }
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

fn check(g: &Guard, pairs: &[(&'static str, &str)]) -> Result<(), Refusal> {
    g.check(&headers(pairs), &Uri::from_static("/mcp"))
}

#[test]
fn allows_loopback_hosts_on_any_port() {
    let g = Guard::new(&config(&[], &[], None));
    for host in [
        "localhost:8750",
        "127.0.0.1:1",
        "[::1]:8750",
        "LOCALHOST",
        "127.0.0.1",
    ] {
        assert_eq!(check(&g, &[("host", host)]), Ok(()), "{host}");
    }
}

#[test]
fn refuses_rebound_hosts_unless_configured() {
    let g = Guard::new(&config(&["tools.example.com", "box:9000"], &[], None));
    assert!(matches!(
        check(&g, &[("host", "evil.example:8750")]),
        Err(Refusal::HostNotAllowed(_))
    ));
    assert_eq!(check(&g, &[("host", "tools.example.com:443")]), Ok(()));
    assert_eq!(check(&g, &[("host", "box:9000")]), Ok(()));
    assert!(check(&g, &[("host", "box:9001")]).is_err());
    assert_eq!(check(&g, &[]), Err(Refusal::BadHost));
    assert_eq!(
        check(&g, &[("host", "user@localhost")]),
        Err(Refusal::BadHost)
    );
}

#[test]
fn checks_origin_when_present() {
    let g = Guard::new(&config(&[], &["https://app.example.com", "null"], None));
    let host = ("host", "localhost:8750");
    assert_eq!(check(&g, &[host]), Ok(()));
    assert_eq!(
        check(&g, &[host, ("origin", "http://localhost:6274")]),
        Ok(())
    );
    assert_eq!(check(&g, &[host, ("origin", "http://[::1]:3000")]), Ok(()));
    assert_eq!(
        check(&g, &[host, ("origin", "https://app.example.com")]),
        Ok(())
    );
    assert_eq!(
        check(&g, &[host, ("origin", "https://app.example.com:443")]),
        Ok(())
    );
    assert_eq!(check(&g, &[host, ("origin", "null")]), Ok(()));
    for bad in [
        "https://app.example.com:8443",
        "http://app.example.com",
        "https://evil.example",
        "garbage",
    ] {
        assert!(
            matches!(
                check(&g, &[host, ("origin", bad)]),
                Err(Refusal::OriginNotAllowed(_))
            ),
            "{bad}"
        );
    }
    let strict = Guard::new(&config(&[], &[], None));
    assert!(check(&strict, &[host, ("origin", "null")]).is_err());
}

#[test]
fn refuses_a_host_or_origin_whose_port_is_not_a_number() {
    let g = Guard::new(&config(&["box:9000"], &["https://app.example.com"], None));
    for host in [
        "127.0.0.1:8750.evil.com",
        "localhost:80evil",
        "[::1]:8750.evil.com",
        "127.0.0.1:",
        "box:9000.evil.com",
        "127.0.0.1:99999",
    ] {
        assert!(
            matches!(
                check(&g, &[("host", host)]),
                Err(Refusal::HostNotAllowed(_))
            ),
            "{host}"
        );
        let (status, _) = check(&g, &[("host", host)])
            .unwrap_err()
            .status_and_message();
        assert_eq!(status, StatusCode::FORBIDDEN, "{host}");
    }
    let host = ("host", "localhost:8750");
    for origin in [
        "http://127.0.0.1:8750.evil.com",
        "http://localhost:80evil",
        "https://app.example.com:443.evil.com",
        "http://localhost:",
    ] {
        assert!(
            matches!(
                check(&g, &[host, ("origin", origin)]),
                Err(Refusal::OriginNotAllowed(_))
            ),
            "{origin}"
        );
    }
    // Still allowed: the same hosts with numeric ports.
    assert_eq!(check(&g, &[("host", "[::1]:8750")]), Ok(()));
    assert_eq!(check(&g, &[("host", "box:9000")]), Ok(()));
}

#[test]
fn refuses_duplicate_host_and_origin_headers() {
    let g = Guard::new(&config(&[], &[], None));
    for pair in [
        [("host", "localhost:8750"), ("host", "evil.example")],
        [("host", "evil.example"), ("host", "localhost:8750")],
        [("host", "localhost:8750"), ("host", "localhost:8750")],
    ] {
        let refused = check(&g, &pair).unwrap_err();
        assert!(matches!(refused, Refusal::HostNotAllowed(_)), "{pair:?}");
        assert_eq!(refused.status_and_message().0, StatusCode::FORBIDDEN);
    }
    let origins = [
        ("host", "localhost:8750"),
        ("origin", "http://localhost:1"),
        ("origin", "https://evil.example"),
    ];
    assert!(matches!(
        check(&g, &origins),
        Err(Refusal::OriginNotAllowed(_))
    ));
}

#[test]
fn gives_rmcp_the_same_lists() {
    let g = Guard::new(&config(
        &["box:9000", "[fe80::1]"],
        &["https://app.example.com"],
        None,
    ));
    let hosts = g.rmcp_hosts().unwrap();
    assert!(hosts.contains(&"box:9000".to_string()));
    assert!(hosts.contains(&"fe80::1".to_string()));
    let origins = g.rmcp_origins();
    assert!(origins.contains(&"http://[::1]:*".to_string()));
    assert!(origins.contains(&"https://app.example.com:443".to_string()));
    // rmcp matches names only: with a range, `/mcp` relies on the guard, which runs first.
    let ranged = Guard::new(&config(&["box:9000", "10.0.0.0/8"], &[], None));
    assert_eq!(ranged.rmcp_hosts(), None);
}

// `server.allowed-hosts` ranges: IP literals inside them pass, names never do (DNS rebinding sends
// the attacker's name, never an address).

#[test]
fn a_range_allows_ip_literals_inside_it_on_any_port() {
    let g = Guard::new(&config(&["10.0.0.0/8", "fd00::/8"], &[], None));
    for host in [
        "10.1.2.3",
        "10.1.2.3:8750",
        "10.255.255.255:1",
        "[fd12::1]:8750",
        "[FD12::1]",
    ] {
        assert_eq!(check(&g, &[("host", host)]), Ok(()), "{host}");
    }
    for host in [
        "11.0.0.1:8750",
        "9.255.255.255",
        "192.168.1.1:8750",
        "[fe80::1]:8750",
        "[fe00::1]",
        // The same address written as IPv6 is another family: not in an IPv4 range.
        "[::ffff:10.1.2.3]:8750",
    ] {
        assert!(
            matches!(
                check(&g, &[("host", host)]),
                Err(Refusal::HostNotAllowed(_))
            ),
            "{host}"
        );
    }
}

#[test]
fn a_hostname_never_matches_a_range() {
    // Even ranges that hold every address: a name is not an address, however it begins.
    let g = Guard::new(&config(&["10.0.0.0/8", "0.0.0.0/0", "::/0"], &[], None));
    for host in [
        "10.1.2.3.evil.com",
        "10.1.2.3.evil.com:8750",
        "10.1.2.3.nip.io",
        "10-1-2-3.evil.com:8750",
        "evil.com",
        "0x0a010203",
        "167772163",
        "10.1.2",
        "010.001.002.003",
        "fd12--1.evil.com",
    ] {
        assert!(
            matches!(
                check(&g, &[("host", host)]),
                Err(Refusal::HostNotAllowed(_))
            ),
            "{host}"
        );
    }
    // An address's port is as strict as a name's: not read as the address before it.
    for host in ["10.1.2.3:8750.evil.com", "[fd12::1]:80evil", "10.1.2.3:"] {
        assert!(
            matches!(
                check(&g, &[("host", host)]),
                Err(Refusal::HostNotAllowed(_))
            ),
            "{host}"
        );
    }
    // A bare IPv6 address without brackets is not a Host at all.
    assert!(check(&g, &[("host", "fd12::1")]).is_err());
}

#[test]
fn a_range_beside_names_leaves_the_names_exact() {
    let g = Guard::new(&config(&["tools.internal", "10.0.0.0/8"], &[], None));
    assert_eq!(check(&g, &[("host", "tools.internal:8750")]), Ok(()));
    assert_eq!(check(&g, &[("host", "10.0.0.7:8750")]), Ok(()));
    for host in [
        "tools.internal.evil.com",
        "evil.tools.internal",
        "10.0.0.7.tools.internal",
    ] {
        assert!(
            matches!(
                check(&g, &[("host", host)]),
                Err(Refusal::HostNotAllowed(_))
            ),
            "{host}"
        );
    }
}
