//! Registry credentials: the environment variables a `[registries."HOST"]` entry names, else the
//! entry for the registry in the standard Docker config file (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`, as `docker login` writes it), else anonymous. Credential helpers
//! (`credsStore`) are not run: toolhost starts no programs.

use std::path::PathBuf;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use toolhost_config::config::RegistrySettings;

use super::RemoteError;

/// How to authenticate to a registry: HTTP Basic, which also buys a bearer token from the token
/// service a registry names in its challenge.
#[derive(Debug, Clone)]
pub(super) enum RegistryAuth {
    /// No credentials.
    Anonymous,
    /// A user and password.
    Basic(String, String),
}

#[derive(Deserialize, Default)]
struct DockerConfig {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize, Default)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// How to authenticate to `registry`.
pub(super) fn auth_for(
    registry: &str,
    settings: &RegistrySettings,
) -> Result<RegistryAuth, RemoteError> {
    if let Some((user_var, password_var)) = &settings.credentials_env {
        let var = |name: &str| {
            std::env::var(name).map_err(|_| RemoteError::Credentials {
                registry: registry.to_owned(),
                message: format!("the environment variable {name} is not set"),
            })
        };
        return Ok(RegistryAuth::Basic(var(user_var)?, var(password_var)?));
    }
    let Some(path) = docker_config_path() else {
        return Ok(RegistryAuth::Anonymous);
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(RegistryAuth::Anonymous);
    };
    let bad = |message: String| RemoteError::Credentials {
        registry: registry.to_owned(),
        message: format!("{}: {message}", path.display()),
    };
    let config: DockerConfig = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let entry = config.auths.iter().find(|(key, _)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        host.split('/').next() == Some(registry)
    });
    let Some((_, entry)) = entry else {
        return Ok(RegistryAuth::Anonymous);
    };
    if let Some(encoded) = &entry.auth {
        let decoded = STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| bad("its `auth` is not base64 of USER:PASSWORD".into()))?;
        let (user, password) = decoded
            .split_once(':')
            .ok_or_else(|| bad("its `auth` is not base64 of USER:PASSWORD".into()))?;
        return Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()));
    }
    match (&entry.username, &entry.password) {
        (Some(u), Some(p)) => Ok(RegistryAuth::Basic(u.clone(), p.clone())),
        _ => Ok(RegistryAuth::Anonymous),
    }
}

fn docker_config_path() -> Option<PathBuf> {
    match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) => Some(PathBuf::from(dir).join("config.json")),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker/config.json")),
    }
}
