//! Outgoing HTTP policy: which destinations a plugin may reach ([`Destination`], [`NetworkGrant`]),
//! which addresses are never reached unless named ([`AddressClass`]), and the named secrets the host
//! adds to requests and removes from everything a guest returns ([`Redactor`]).
//! Pure; the sandbox's `network` module enforces it on `wasi:http`.

mod address;
mod destination;
mod grant;
mod secret;

pub use self::address::{AddressClass, classify};
pub use self::destination::{Destination, DestinationError, Host, HostPattern, Scheme, Target};
pub use self::grant::{
    CallerSecret, CallerSource, Exchange, NetworkGrant, NetworkLimits, SecretGrant, SecretHeader,
};
pub use self::secret::{REDACTED, Redactor, Secret};
