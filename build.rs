//! Compiles the public contract in `proto/` with `protox` (pure Rust: no system
//! `protoc`) and generates the tonic server and client code. The encoded
//! descriptor set is written to `OUT_DIR` for server reflection.

use std::path::PathBuf;

use prost::Message as _;

const PROTOS: &[&str] = &[
    "proto/referee/v1/referee.proto",
    "proto/referee/v1/tournament.proto",
    "proto/referee/v1/webhooks.proto",
    "proto/punct/v1/punct.proto",
    "proto/dots/v1/dots.proto",
    "proto/punto/v1/punto.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // tonic-prost-build's compile_fds path emits no rerun-if-changed itself.
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(PROTOS, ["proto"])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    // Not written by compile_fds either: reflection needs it.
    std::fs::write(out_dir.join("referee_descriptor.bin"), fds.encode_to_vec())?;
    std::fs::write(out_dir.join("game_packages.rs"), game_packages())?;
    tonic_prost_build::configure()
        // The server stubs are generated below, on their own.
        .build_server(false)
        .build_client(true)
        // Generated code is not ours to lint.
        .type_attribute(".", "#[allow(clippy::all)]")
        // Shared per ply, sent without a copy (docs/API.md "Compact reads").
        .bytes(".referee.v1.ListLegalMovesResponse.notation_text")
        // A move travels by value through every layer of a call (decoded,
        // wrapped, handed on, encoded): the Dots and Punto moves (200 and
        // 408 bytes) and a game's outcome (168 bytes, only a last move has
        // one) are boxed so that a PÜNCT move's request and answer are not
        // copied at their size (docs/API.md "Transport").
        .boxed(".referee.v1.Move.game.dots")
        .boxed(".referee.v1.Move.game.punto")
        .boxed(".referee.v1.SubmitMoveResponse.outcome")
        .compile_fds(fds.clone())?;
    // The server stubs once more, on their own, over the messages above,
    // but for answers the service sends encoded once and shared
    // (docs/API.md "Compact reads"): GetGame's.
    let server_dir = out_dir.join("server");
    std::fs::create_dir_all(&server_dir)?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(false)
        // prost's codec with a smaller decode buffer (src/service/grpc/codec.rs).
        .codec_path("crate::service::grpc::codec::SmallBufferCodec")
        .out_dir(&server_dir)
        .extern_path(".referee.v1", "crate::service::grpc::pb::referee::v1")
        .extern_path(".punct.v1", "crate::service::grpc::pb::punct::v1")
        .extern_path(".dots.v1", "crate::service::grpc::pb::dots::v1")
        .extern_path(".punto.v1", "crate::service::grpc::pb::punto::v1")
        .extern_path(
            ".referee.v1.GetGameResponse",
            "crate::service::grpc::answer::GetGameAnswer",
        )
        .compile_fds(fds)?;
    Ok(())
}

/// The module of each game's package (`proto/<game>/v1/`), for
/// `src/service/grpc/pb.rs` to include: the games are named here, by their
/// proto folders, and nowhere in the crate's generic code.
fn game_packages() -> String {
    let mut out = String::new();
    for path in PROTOS {
        let Some(game) = path
            .strip_prefix("proto/")
            .and_then(|p| p.split('/').next())
        else {
            continue;
        };
        if game == "referee" || out.contains(&format!("pub mod {game} ")) {
            continue;
        }
        out.push_str(&format!(
            "/// Package `{game}.v1`: the messages of the game `{game}`.\n\
             pub mod {game} {{\n\
             /// Version 1.\n\
             pub mod v1 {{\n\
             #![allow(missing_docs, clippy::all)]\n\
             tonic::include_proto!(\"{game}.v1\");\n\
             }}\n\
             }}\n"
        ));
    }
    out
}
