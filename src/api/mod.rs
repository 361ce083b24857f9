//! The gRPC layer: tonic services that convert protobuf to domain values,
//! call the session layer, and map failures to `tonic::Status`.

pub mod pb;
