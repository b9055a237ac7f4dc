//! A generic WASI 0.3 component for the host's tests: its exports are `async func`s, each served
//! as a tool like any generic component's functions.

wit_bindgen::generate!({
    inline: r#"
        package local:waits;

        world waits {
            /// Wait `ms` milliseconds (WASI 0.3 clocks), then say so.
            export wait: async func(ms: u64) -> string;
            /// Greet `name`, after waiting for nothing.
            export greet: async func(name: string) -> string;
        }
    "#,
});

use wasip3::clocks::monotonic_clock;

struct Waits;

impl Guest for Waits {
    async fn wait(ms: u64) -> String {
        monotonic_clock::wait_for(ms * 1_000_000).await;
        format!("waited {ms} ms")
    }

    async fn greet(name: String) -> String {
        format!("hello, {name}")
    }
}

export!(Waits);
