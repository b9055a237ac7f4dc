//! `[server]` and `[engine]`: addresses, hosts, timeouts, pools and the values refused.

use super::*;
use crate::config::Config;

#[test]
fn a_port_alone_or_on_localhost_listens_on_loopback() {
    let loopback = |port| SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(listen_address("8763"), Ok(loopback(8763)));
    assert_eq!(listen_address(":8763"), Ok(loopback(8763)));
    assert_eq!(listen_address("localhost:8763"), Ok(loopback(8763)));
    assert_eq!(listen_address(" 127.0.0.1:0 "), Ok(loopback(0)));
    assert_eq!(
        listen_address("[::1]:9").unwrap(),
        "[::1]:9".parse::<SocketAddr>().unwrap()
    );
    for bad in [
        "",
        "localhost",
        "99999",
        "localhost:x",
        "example.com:80",
        "8763.evil",
    ] {
        let e = listen_address(bad).unwrap_err();
        assert!(
            e.contains("IP:PORT") || e.contains("port is a number"),
            "{bad}: {e}"
        );
    }
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    let raw = toml::from_str(text).unwrap();
    Config::from_raw(raw, std::path::Path::new("."), &Overrides::default())
}

#[test]
fn refuses_public_http_without_token() {
    let e = parse("[server]\nhttp = \"0.0.0.0:8750\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("token-env"), "{e}");
}

#[test]
fn pool_fits_calls_and_the_largest_memory_limit_by_default() {
    let c = parse("[server]\nmax-concurrent-calls = 8\n[plugins.big.limits]\nmemory-mb = 512\n")
        .unwrap();
    let pool = c.pool.unwrap();
    assert_eq!(
        (pool.instances, pool.memory_bytes),
        (8 + LOAD_INSTANCES, 512 << 20)
    );
    assert!(parse("[engine]\npooling = false\n").unwrap().pool.is_none());
}

#[test]
fn a_short_list_takes_names_and_globs_and_names_a_bad_entry() {
    let c = parse("[server]\nshort-list = [\"search_tools\", \"run_*\"]\n").unwrap();
    let listed = |t: &str| c.server.short_list.iter().any(|p| p.matches(t));
    assert!(listed("search_tools") && listed("run_script") && !listed("read_file"));
    assert!(parse("").unwrap().server.short_list.is_empty());
    let e = parse("[server]\nshort-list = [\"ok\", \"no/slash\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("server.short-list[1]"), "{e}");
}

#[test]
fn refuses_a_pool_slot_smaller_than_a_memory_limit() {
    let e = parse("[engine]\nmemory-mb = 64\n[limits]\nmemory-mb = 32\n[plugins.big.limits]\nmemory-mb = 128\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("engine.memory-mb") && e.contains("plugins.big.limits.memory-mb"),
        "{e}"
    );
}

#[test]
fn a_malformed_allowed_hosts_entry_is_an_error_naming_it() {
    for (bad, why) in [
        ("10.0.0.0/33", "prefix"),
        ("fd00::/129", "prefix"),
        ("10.0.0.0/", "prefix"),
        ("10.0.0.0/x8", "prefix"),
        ("10.0.0.1/8", "10.0.0.0/8"),
        ("evil.com/8", "address"),
        ("10.0.0.0/8:8750", "prefix"),
        ("[fd00::]/8", "address"),
        ("box:port", "port"),
        ("user@box", "host"),
        ("", "host"),
    ] {
        let text = format!("[server]\nallowed-hosts = [\"tools.internal\", \"{bad}\"]\n");
        let e = parse(&text).expect_err(bad).to_string();
        assert!(
            e.contains("server.allowed-hosts[1]") && e.contains(why),
            "{bad}: {e}"
        );
    }
    let text = "[server]\nallowed-hosts = [\"10.0.0.0/8\", \"fd00::/8\", \"10.1.2.3/32\", \
                \"tools.internal\", \"box:9000\", \"[fe80::1]\"]\n";
    assert_eq!(parse(text).unwrap().server.allowed_hosts.len(), 6);
}
