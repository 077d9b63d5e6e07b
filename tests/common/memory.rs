//! How much memory this process holds, three ways, for the tests that prove a cycle (a shot
//! rebuild, an element state change) leaves nothing behind. Shared by the engine's tests and,
//! through a `#[path]` module, the element's.
#![allow(dead_code)]

/// glibc's count of the bytes the process has allocated and not freed (`mallinfo2`: in-use
/// chunks of every arena plus mmapped chunks): a leak of one allocation per cycle shows in it
/// byte for byte, while the allocator's own caching (RSS steps when an arena grows its heap or
/// a fragment gets reused) does not.
pub fn heap_in_use() -> f64 {
    #[repr(C)]
    struct Mallinfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    extern "C" {
        fn mallinfo2() -> Mallinfo2;
    }
    // SAFETY: mallinfo2 takes no arguments and returns a plain struct by value (glibc >= 2.33).
    let m = unsafe { mallinfo2() };
    (m.uordblks + m.hblkhd) as f64
}

/// The process's anonymous resident memory (`RssAnon` of /proc/self/status), in bytes: heap,
/// stacks and anonymous mappings, without the pages of shared libraries and files that RSS
/// also counts (code paged in as rarer paths first run, or dropped under memory pressure:
/// steps of hundreds of KiB either way that say nothing about leaks).
pub fn rss_anon() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib * 1024.0)
}

/// Resident set size of this process in bytes.
pub fn rss() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0
}
