//! The `punct-referee` binary: its commands are the library's
//! [`punct_referee::cli`]; this file only picks the allocator.

// mimalloc instead of glibc's malloc: under many concurrent calls (and with
// the SQLite writer thread freeing what the workers allocated) glibc's
// free-list searches took ~16 µs of a durable move's server CPU; mimalloc's
// thread-local heaps made durable moves and no-op calls ~20-25% cheaper at
// the same memory per idle game (docs/BENCHMARKS.md, "Allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(target_os = "linux")]
mod arenas {
    // mimalloc's options (`mimalloc.h`, `mi_option_e`), by the index the
    // bundled mimalloc 3.x gives them: libmimalloc-sys binds the two functions
    // but names no constant for this option.
    unsafe extern "C" {
        fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }

    /// `mi_option_arena_eager_commit`: whether arenas are committed up front
    /// (2, the default: on systems that overcommit, as Linux does).
    const ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

    /// Arenas committed as they are used rather than up front: a server
    /// holding thousands of silent watch streams kept 11-15 KB of resident
    /// memory per stream with eager commit and 5.5 KB without, and 19 instead
    /// of 36 MiB at start, for the same moves/s (docs/BENCHMARKS.md, "Watchers
    /// that never read"). Left alone when the option is not at its default:
    /// set by `MIMALLOC_ARENA_EAGER_COMMIT`, or another mimalloc numbering.
    ///
    /// mimalloc reads the option when it makes its first arena, at the first
    /// allocation, which comes before `main`: this runs earlier still, from the
    /// ELF constructors (`.init_array`), before the Rust runtime allocates.
    extern "C" fn commit_arenas_lazily() {
        // SAFETY: both are plain C calls on mimalloc's option table, valid at
        // any time in the process (they allocate nothing).
        unsafe {
            if mi_option_get(ARENA_EAGER_COMMIT) == 2 {
                mi_option_set(ARENA_EAGER_COMMIT, 0);
            }
        }
    }

    #[used]
    #[unsafe(link_section = ".init_array")]
    static COMMIT_ARENAS_LAZILY: extern "C" fn() = commit_arenas_lazily;
}

fn main() -> std::process::ExitCode {
    punct_referee::cli::main()
}
