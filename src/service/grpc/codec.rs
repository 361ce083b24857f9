//! The codec of the generated server stubs (`build.rs`: `codec_path`):
//! prost's, with smaller per-call buffers.
//!
//! tonic gives every call a decode buffer and an encode buffer of 8 KiB
//! each. The service's requests are a few hundred bytes at most (a move is
//! about 110) and most answers under 1 KiB, so each call allocated 16 KiB
//! for a few hundred bytes, and a move's 8 KiB decode buffer was where the
//! kernel's zeroing of fresh pages showed up in its profile
//! (docs/BENCHMARKS.md "A move played in place"). A buffer of 1 KiB grows
//! as a larger message needs (an imported record, a list of legal moves),
//! exactly as the 8 KiB one did past 8 KiB.

use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Bytes each call's decode and encode buffers start with.
pub const BUFFER_BYTES: usize = 1024;

/// tonic's threshold for yielding while encoding a stream, unchanged.
const YIELD_THRESHOLD: usize = 32 * 1024;

/// prost's codec with [`BUFFER_BYTES`] buffers.
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
        ProstCodec::<T, U>::raw_encoder(BufferSettings::new(BUFFER_BYTES, YIELD_THRESHOLD))
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(BufferSettings::new(BUFFER_BYTES, YIELD_THRESHOLD))
    }
}
