//! The gRPC and HTTP service through a real socket, each test with its own
//! server in this process (`common::TestServer`): games of every kind,
//! errors and their details, streams, clocks, overload, security, tournaments
//! and the API's property tests.
#![allow(
    unreachable_pub,
    reason = "helpers are `pub` for the other modules of this test binary, which is all that can reach them"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a test is one scenario read top to bottom; its steps are named in its comments"
)]

mod common;

#[path = "service/api_properties.rs"]
mod api_properties;
#[path = "service/delayed_spectators.rs"]
mod delayed_spectators;
#[path = "service/failure_policies.rs"]
mod failure_policies;
#[path = "service/lag.rs"]
mod lag;
#[path = "service/play.rs"]
mod play;
#[path = "service/receipts.rs"]
mod receipts;
#[path = "service/security.rs"]
mod security;
#[path = "service/service_clocks.rs"]
mod service_clocks;
#[path = "service/service_dots.rs"]
mod service_dots;
#[path = "service/service_errors.rs"]
mod service_errors;
#[path = "service/service_game.rs"]
mod service_game;
#[path = "service/service_http.rs"]
mod service_http;
#[path = "service/service_overload.rs"]
mod service_overload;
#[path = "service/service_punto.rs"]
mod service_punto;
#[path = "service/service_render.rs"]
mod service_render;
#[path = "service/service_streams.rs"]
mod service_streams;
#[path = "service/three_seats.rs"]
mod three_seats;
#[path = "service/tournament_service.rs"]
mod tournament_service;
#[path = "service/webhooks.rs"]
mod webhooks;
