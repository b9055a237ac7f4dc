//! A plugin's named secrets, bound once at load: the one place in the sandbox that reads their
//! values (for the env of the WASI context, and for the headers the host adds to requests) and that
//! redacts them from everything the guest produces (its answer, output, logs, progress, and the
//! reasons its requests failed). Reading the secrets from the config is `toolhost_config`'s.

use std::sync::Arc;

use http::{HeaderName, HeaderValue};

use super::report::{GuestError, GuestOutput, RunError, RunReport};
use toolhost_gate::network::{Destination, Redactor, SecretGrant};

/// A plugin's secrets, bound: shared by the capabilities that use them, for all of its calls.
#[derive(Debug)]
pub(crate) struct Secrets {
    /// Env names with their secret values, for the WASI context.
    env: Vec<(String, toolhost_gate::network::Secret)>,
    /// Headers the host adds to requests, parsed once.
    headers: Vec<SecretHeader>,
    /// Replaces every secret (env ones too) in text leaving the sandbox.
    redactor: Redactor,
}

/// A header the host adds to the requests to its destinations. `Debug` is safe: the value is
/// marked sensitive and prints as `Sensitive`.
#[derive(Debug, Clone)]
pub(crate) struct SecretHeader {
    pub(crate) name: HeaderName,
    pub(crate) value: HeaderValue,
    pub(crate) destinations: Vec<Destination>,
}

/// A secret the host cannot use as it was given.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SecretsError {
    /// Its header's name or value is not valid HTTP (the config checks it; this is the last guard).
    #[error("secret '{secret}': its header is not valid HTTP ({why})")]
    BadHeader {
        /// The secret's name in the config.
        secret: String,
        /// What is wrong with it.
        why: String,
    },
}

impl Secrets {
    /// Bind `secrets`: headers parsed, redactor built.
    pub(crate) fn bind(secrets: &[SecretGrant]) -> Result<Self, SecretsError> {
        let mut headers = Vec::new();
        for s in secrets {
            let Some(h) = &s.header else { continue };
            let bad = |why: String| SecretsError::BadHeader {
                secret: s.name.clone(),
                why,
            };
            let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|e| bad(e.to_string()))?;
            let mut value =
                HeaderValue::from_str(h.value.expose()).map_err(|e| bad(e.to_string()))?;
            value.set_sensitive(true);
            headers.push(SecretHeader {
                name,
                value,
                destinations: h.destinations.clone(),
            });
        }
        Ok(Self {
            env: secrets
                .iter()
                .filter_map(|s| Some((s.env.clone()?, s.value.clone())))
                .collect(),
            headers,
            redactor: Redactor::new(secrets.iter().map(|s| &s.value)),
        })
    }

    /// These secrets and a call's own (the caller's credentials, headers only), for that call.
    pub(crate) fn for_call(
        self: &Arc<Self>,
        own: &[SecretGrant],
    ) -> Result<Arc<Self>, SecretsError> {
        if own.is_empty() {
            return Ok(self.clone());
        }
        let own = Self::bind(own)?;
        let mut headers = self.headers.clone();
        headers.extend(own.headers);
        Ok(Arc::new(Self {
            env: self.env.clone(),
            headers,
            redactor: self.redactor.join(&own.redactor),
        }))
    }

    /// The secrets granted as env vars: (name, value).
    pub(crate) fn env(&self) -> impl Iterator<Item = (&str, &str)> {
        self.env.iter().map(|(k, v)| (k.as_str(), v.expose()))
    }

    /// The headers the host adds, each to its destinations' requests.
    pub(crate) fn headers(&self) -> &[SecretHeader] {
        &self.headers
    }

    /// Replaces the plugin's secrets (all of them, env ones too) in text leaving the sandbox.
    pub(crate) fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// A call's report with the plugin's secrets replaced in everything the guest produced: content,
    /// structured output, its error messages, trap messages (which quote stderr), stdout, stderr and
    /// the reasons its requests failed.
    pub(crate) fn redact_report(
        &self,
        report: RunReport<Result<GuestOutput, GuestError>>,
    ) -> RunReport<Result<GuestOutput, GuestError>> {
        let r = &self.redactor;
        if r.is_empty() {
            return report;
        }
        let result = match report.result {
            Ok(Ok(out)) => Ok(Ok(GuestOutput {
                content: r.redact(out.content),
                structured: r.redact_opt(out.structured),
            })),
            Ok(Err(GuestError::InvalidInput(m))) => Ok(Err(GuestError::InvalidInput(r.redact(m)))),
            Ok(Err(GuestError::Failed(m))) => Ok(Err(GuestError::Failed(r.redact(m)))),
            Err(RunError::Trap(m)) => Err(RunError::Trap(r.redact(m))),
            Err(other) => Err(other),
        };
        RunReport {
            result,
            stdout: r.redact(report.stdout),
            stderr: r.redact(report.stderr),
            network: report.network.into_iter().map(|n| r.redact(n)).collect(),
            files: report.files.into_iter().map(|n| r.redact(n)).collect(),
            ..report
        }
    }
}
