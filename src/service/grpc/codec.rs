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
//! (docs/BENCHMARKS.md, "Watchers that never read"). A snapshot larger than
//! the buffer grows it for that message, as tonic does past 8 KiB.

use std::any::TypeId;
use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Bytes each call's decode buffer starts with.
pub const DECODE_BUFFER_BYTES: usize = 1024;

/// Bytes a watch stream's encode buffer starts with.
pub const STREAM_ENCODE_BUFFER_BYTES: usize = 1024;

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
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        let settings = if is_stream_item::<T>() {
            BufferSettings::new(STREAM_ENCODE_BUFFER_BYTES, YIELD_THRESHOLD)
        } else {
            BufferSettings::default()
        };
        ProstCodec::<T, U>::raw_encoder(settings)
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(BufferSettings::new(DECODE_BUFFER_BYTES, YIELD_THRESHOLD))
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
}
