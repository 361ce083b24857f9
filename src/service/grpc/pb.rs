//! The generated protobuf messages and tonic stubs of `proto/`.

/// Package `referee.v1`: what every game shares, and the service.
pub mod referee {
    /// Version 1.
    pub mod v1 {
        #![allow(missing_docs, clippy::all)]
        tonic::include_proto!("referee.v1");
    }
}

// Each game's package (`<game>.v1`, from `proto/<game>/v1/`): one module
// per game, listed by the build script from the proto folders.
include!(concat!(env!("OUT_DIR"), "/game_packages.rs"));

/// The encoded descriptor set of every `.proto` file, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/referee_descriptor.bin"));
