//! RenderPosition: SVG pictures of a game now and at earlier plies.

use crate::common;

use common::*;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use tonic::Code;
use tonic_types::StatusExt;

async fn render(
    client: &mut Client,
    id: &str,
    ply: Option<u32>,
) -> Result<pb::RenderPositionResponse, tonic::Status> {
    client
        .render_position(pb::RenderPositionRequest {
            game_id: id.to_string(),
            ply,
            token: String::new(),
        })
        .await
        .map(tonic::Response::into_inner)
}

fn count(svg: &str, needle: &str) -> usize {
    svg.matches(needle).count()
}

#[tokio::test]
async fn renders_now_and_earlier_plies_with_highlights() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Standard).await;

    let empty = render(&mut client, &table.id, None).await.unwrap();
    assert_eq!(empty.ply, 0);
    assert!(empty.svg.starts_with("<svg "));
    assert_eq!(count(&empty.svg, r#"<circle class="space"#), 211);
    assert_eq!(count(&empty.svg, r#"<g class="piece "#), 0);

    for (ply, mv) in CONNECTION_GAME.iter().enumerate() {
        submit(&mut client, &table, ply as u32, notation(mv))
            .await
            .unwrap();
    }
    // Now: 11 pieces, the last move (T@I16:J16,J17) ringed, White's winning
    // chain outlined.
    let now = render(&mut client, &table.id, None).await.unwrap();
    assert_eq!(now.ply, 11);
    assert_eq!(count(&now.svg, r#"<g class="piece "#), 11);
    for s in ["I16", "J16", "J17"] {
        assert!(
            now.svg
                .contains(&format!(r#"<circle class="last" data-space="{s}""#)),
            "{s}"
        );
    }
    assert!(count(&now.svg, r#"<circle class="chain""#) >= 17);

    // After 3 plies: 3 pieces, the third move highlighted, no chain.
    let early = render(&mut client, &table.id, Some(3)).await.unwrap();
    assert_eq!(early.ply, 3);
    assert_eq!(count(&early.svg, r#"<g class="piece "#), 3);
    assert!(
        early
            .svg
            .contains(r#"<circle class="last" data-space="E4""#)
    );
    assert_eq!(count(&early.svg, r#"<circle class="chain""#), 0);
    // The same ply gives the same picture.
    assert_eq!(
        render(&mut client, &table.id, Some(3)).await.unwrap().svg,
        early.svg
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn unknown_games_and_future_plies_are_refused() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Basic).await;
    let s = render(&mut client, "no-such-game", None).await.unwrap_err();
    assert_eq!(s.code(), Code::NotFound);
    let s = render(&mut client, &table.id, Some(1)).await.unwrap_err();
    assert_eq!(s.code(), Code::OutOfRange);
    let violations = s
        .get_details_bad_request()
        .expect("bad request")
        .field_violations;
    assert_eq!(violations[0].field, "ply");
    assert!(
        s.message().contains("ply 1 is beyond the game's ply 0"),
        "{}",
        s.message()
    );
    server.stop().await.unwrap();
}
