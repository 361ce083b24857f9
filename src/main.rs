//! The `punct-referee` binary: its commands are the library's
//! [`punct_referee::cli`]; this file only picks the allocator.

// mimalloc instead of glibc's malloc: under many concurrent calls (and with
// the SQLite writer thread freeing what the workers allocated) glibc's
// free-list searches took ~16 µs of a durable move's server CPU; mimalloc's
// thread-local heaps made durable moves and no-op calls ~20-25% cheaper at
// the same memory per idle game (docs/BENCHMARKS.md, "Allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    punct_referee::cli::main()
}
