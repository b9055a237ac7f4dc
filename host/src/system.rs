//! What the machine offers this process, asked of the system once: the cores it may use. A leaf
//! module: the layers that size their pools by it (exec, registry) and the binary's runtime read it
//! here, and it imports nothing of toolhost.

use std::sync::OnceLock;

/// The cores this process may use, asked of the system once: each answer reads
/// `/proc/self/cgroup` and the cgroup's CPU quota, which on the way to the first answer cost
/// more than what they size.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}
