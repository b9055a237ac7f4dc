//! A bounded histogram of durations and the nearest-rank percentile; no locking, no time.

/// The rank (1-based) of the `percent`th percentile among `n` values, by nearest rank.
fn rank(percent: u64, n: u64) -> u64 {
    (percent * n).div_ceil(100).max(1)
}

/// The `percent`th percentile of sorted `values` by nearest rank; 0 when empty.
pub(super) fn nearest_rank(sorted: &[u64], percent: u64) -> u64 {
    match sorted.len() as u64 {
        0 => 0,
        n => sorted[(rank(percent, n) - 1) as usize],
    }
}

/// Sub-buckets per power of two: the relative width of a bucket is at most 1/8, so a bucket's
/// midpoint is within 6.25% of any value in it.
const SUB_BUCKETS: u32 = 8;
/// Values below this get a bucket each.
const LINEAR: u64 = 16;
/// Buckets for every u64: 16 exact ones, then 8 per power of two from 2^4 to 2^63.
const LOG_BUCKETS: usize = LINEAR as usize + (64 - 4) * SUB_BUCKETS as usize;

/// A log-linear histogram of microsecond durations: 496 counters, about 4 KiB, whatever the count.
#[derive(Debug, Clone)]
pub(super) struct LogHistogram {
    counts: Box<[u64; LOG_BUCKETS]>,
}

impl Default for LogHistogram {
    fn default() -> Self {
        Self {
            counts: Box::new([0; LOG_BUCKETS]),
        }
    }
}

impl LogHistogram {
    fn index(value: u64) -> usize {
        if value < LINEAR {
            return value as usize;
        }
        let exponent = 63 - value.leading_zeros(); // at least 4
        let sub = (value >> (exponent - 3)) & u64::from(SUB_BUCKETS - 1);
        LINEAR as usize + ((exponent - 4) * SUB_BUCKETS) as usize + sub as usize
    }

    /// The smallest and largest value that fall in bucket `index`.
    fn bounds(index: usize) -> (u64, u64) {
        if (index as u64) < LINEAR {
            return (index as u64, index as u64);
        }
        let offset = index - LINEAR as usize;
        let exponent = (offset / SUB_BUCKETS as usize) as u32 + 4;
        let sub = (offset % SUB_BUCKETS as usize) as u64;
        let low = (u64::from(SUB_BUCKETS) + sub) << (exponent - 3);
        (low, low + ((1u64 << (exponent - 3)) - 1))
    }

    pub(super) fn add(&mut self, value: u64) {
        self.counts[Self::index(value)] += 1;
    }

    /// The midpoint of the bucket holding the `percent`th percentile of the `n` values added.
    pub(super) fn percentile(&self, percent: u64, n: u64) -> u64 {
        self.percentiles([percent], n)[0]
    }

    /// [`percentile`](Self::percentile) for each of `percents` (in ascending order), in one pass
    /// over the buckets; 0 for those not reached (fewer than `n` values added).
    pub(super) fn percentiles<const N: usize>(&self, percents: [u64; N], n: u64) -> [u64; N] {
        let mut found = [0; N];
        let mut next = 0;
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            while next < N && seen >= rank(percents[next], n) {
                let (low, high) = Self::bounds(index);
                found[next] = low + (high - low) / 2;
                next += 1;
            }
            if next == N {
                break;
            }
        }
        found
    }

    /// Forgets every value, keeping the buckets' memory.
    pub(super) fn clear(&mut self) {
        self.counts.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_tile_every_u64() {
        for value in [
            0,
            1,
            15,
            16,
            17,
            31,
            32,
            1000,
            123_456_789,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let (low, high) = LogHistogram::bounds(LogHistogram::index(value));
            assert!(
                low <= value && value <= high,
                "{value} not in [{low}, {high}]"
            );
        }
        assert_eq!(LogHistogram::index(u64::MAX), LOG_BUCKETS - 1);
        for index in 1..LOG_BUCKETS {
            assert_eq!(
                LogHistogram::bounds(index - 1).1 + 1,
                LogHistogram::bounds(index).0
            );
        }
    }
}
