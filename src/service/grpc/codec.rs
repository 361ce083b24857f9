//! The codec of the generated server stubs (`build.rs`: `codec_path`):
//! prost's, with a smaller decode buffer per call.
//!
//! tonic gives every call a decode buffer of 8 KiB. The service's requests
//! are a few hundred bytes at most (a move is about 110), and a move's
//! 8 KiB decode buffer was where the kernel's zeroing of fresh pages showed
//! up in its profile (docs/BENCHMARKS.md "A move played in place"). A
//! buffer of 1 KiB grows as a larger request needs (an imported record),
//! exactly as the 8 KiB one did past 8 KiB. The encode buffer keeps tonic's
//! 8 KiB for answers: a full `GetGame` answer is several KB and would
//! otherwise grow its buffer on every call.
//!
//! A watch stream's encode buffer starts at [`STREAM_ENCODE_BUFFER_BYTES`]
//! instead: the buffer lives as long as the stream, and a watcher is mostly
//! idle between small events (a move's event is a few hundred bytes), so
//! 8 KiB per open watch was most of what a silent watcher cost the server
//! (docs/BENCHMARKS.md, "Watchers that never read").
//!
//! The encoder reserves each message's exact length before writing it
//! (prost's own encoder lets the buffer double as it writes): a stream's
//! first message, its snapshot, is usually 1 to 2 KB, and a doubling
//! buffer kept 2 KiB per stream for it, while the connection held the
//! message (a silent watcher's connection holds it for good). Reserved
//! exactly, the buffer is the message's size; once the message is sent the
//! next one reuses it, and a message that does not fit gets a buffer of
//! its own size.

use std::any::TypeId;
use std::marker::PhantomData;

use tonic::Status;
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic_prost::{ProstCodec, ProstDecoder};

/// Bytes each call's decode buffer starts with.
pub const DECODE_BUFFER_BYTES: usize = 1024;

/// Bytes a watch stream's encode buffer starts with (its first message
/// grows it to that message's length).
pub const STREAM_ENCODE_BUFFER_BYTES: usize = 64;

/// tonic's yield threshold, unchanged.
const YIELD_THRESHOLD: usize = 32 * 1024;

/// prost's codec with a [`DECODE_BUFFER_BYTES`] decode buffer.
#[derive(Debug, Clone, Copy)]
pub struct SmallBufferCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for SmallBufferCodec<T, U> {
    fn default() -> Self {
        SmallBufferCodec(PhantomData)
    }
}

impl<T, U> Codec for SmallBufferCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ExactEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        let settings = if is_stream_item::<T>() {
            BufferSettings::new(STREAM_ENCODE_BUFFER_BYTES, YIELD_THRESHOLD)
        } else {
            BufferSettings::default()
        };
        ExactEncoder {
            settings,
            _message: PhantomData,
        }
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(BufferSettings::new(DECODE_BUFFER_BYTES, YIELD_THRESHOLD))
    }
}

/// prost's encoding of `T`, into a buffer grown by exactly the message's
/// length first.
#[derive(Debug, Clone)]
pub struct ExactEncoder<T> {
    settings: BufferSettings,
    _message: PhantomData<T>,
}

impl<T: prost::Message> Encoder for ExactEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.reserve(item.encoded_len());
        // The length is reserved: `encode_raw` writes it without checking
        // again (what `encode` would check is this same length).
        item.encode_raw(buf);
        Ok(())
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.settings
    }
}

/// Whether `T` is the item of a long-lived server stream (a watch or a
/// seat's Play stream), whose encode buffer is kept as long as the stream
/// is open.
fn is_stream_item<T: 'static>() -> bool {
    use super::pb::referee::v1 as pb;
    let t = TypeId::of::<T>();
    t == TypeId::of::<pb::WatchGameResponse>() || t == TypeId::of::<pb::PlayResponse>()
}

#[cfg(test)]
mod tests {
    use tonic::codec::Encoder as _;

    use super::*;
    use crate::service::grpc::pb::referee::v1 as pb;

    /// The encode buffer settings of `T`'s encoder (their fields are
    /// private: compared as text).
    fn encode_buffer<T: prost::Message + Send + 'static>() -> String {
        let settings = SmallBufferCodec::<T, pb::GetGameRequest>::default()
            .encoder()
            .buffer_settings();
        format!("{settings:?}")
    }

    #[test]
    fn a_watch_stream_starts_small_and_answers_keep_tonics_buffer() {
        let small = BufferSettings::new(STREAM_ENCODE_BUFFER_BYTES, YIELD_THRESHOLD);
        assert_eq!(
            encode_buffer::<pb::WatchGameResponse>(),
            format!("{small:?}")
        );
        assert_eq!(encode_buffer::<pb::PlayResponse>(), format!("{small:?}"));
        assert_eq!(
            encode_buffer::<pb::GetGameResponse>(),
            format!("{:?}", BufferSettings::default())
        );
        assert_ne!(
            format!("{small:?}"),
            format!("{:?}", BufferSettings::default())
        );
    }

    /// Messages encoded by the exact encoder, as a stream's body sends
    /// them, decode back to themselves: a large one (past the stream's
    /// first buffer) and a small one after it.
    #[tokio::test]
    async fn the_exact_encoder_frames_what_prost_decodes() {
        use bytes::Buf as _;
        use http_body_util::BodyExt as _;
        use prost::Message as _;
        use tonic::codec::{EncodeBody, SingleMessageCompressionOverride};

        let large = pb::WatchGameResponse {
            sequence: 7,
            resync: true,
            item: Some(pb::watch_game_response::Item::Snapshot(pb::Game {
                game_id: "g".repeat(3000),
                ply: 42,
                ..Default::default()
            })),
        };
        let small = pb::WatchGameResponse {
            sequence: 8,
            ..Default::default()
        };
        let encoder =
            SmallBufferCodec::<pb::WatchGameResponse, pb::GetGameRequest>::default().encoder();
        let source = tokio_stream::iter([Ok(large.clone()), Ok(small.clone())]);
        let mut body = std::pin::pin!(EncodeBody::new_server(
            encoder,
            source,
            None,
            SingleMessageCompressionOverride::default(),
            None,
        ));
        let mut bytes = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.expect("frame").into_data() {
                bytes.extend_from_slice(data.chunk());
            }
        }
        let mut decoded = Vec::new();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            assert_eq!(rest[0], 0, "uncompressed");
            let len = u32::from_be_bytes(rest[1..5].try_into().expect("length")) as usize;
            decoded.push(pb::WatchGameResponse::decode(&rest[5..5 + len]).expect("decode"));
            rest = &rest[5 + len..];
        }
        assert_eq!(decoded, vec![large, small]);
    }
}
