//! The generated protobuf messages and tonic stubs of `proto/`.

/// Package `referee.v1`: what every game shares, and the service.
pub mod referee {
    /// Version 1.
    pub mod v1 {
        #![allow(missing_docs, clippy::all)]
        tonic::include_proto!("referee.v1");
    }
}

/// Package `punct.v1`: PÜNCT messages.
pub mod punct {
    /// Version 1.
    pub mod v1 {
        #![allow(missing_docs, clippy::all)]
        tonic::include_proto!("punct.v1");
    }
}

/// Package `dots.v1`: Dots (Kropki) messages.
pub mod dots {
    /// Version 1.
    pub mod v1 {
        #![allow(missing_docs, clippy::all)]
        tonic::include_proto!("dots.v1");
    }
}

/// Package `punto.v1`: Punto messages.
pub mod punto {
    /// Version 1.
    pub mod v1 {
        #![allow(missing_docs, clippy::all)]
        tonic::include_proto!("punto.v1");
    }
}

/// The encoded descriptor set of every `.proto` file, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/referee_descriptor.bin"));
