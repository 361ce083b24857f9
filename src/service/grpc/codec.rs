//! The codec of the generated server stubs (`build.rs`: `codec_path`):
//! prost's, with a smaller decode buffer per call.
//!
//! tonic gives every call a decode buffer of 8 KiB. The service's requests
//! are a few hundred bytes at most (a move is about 110), and a move's
//! 8 KiB decode buffer was where the kernel's zeroing of fresh pages showed
//! up in its profile (docs/BENCHMARKS.md "A move played in place"). A
//! buffer of 1 KiB grows as a larger request needs (an imported record),
//! exactly as the 8 KiB one did past 8 KiB. The encode buffer keeps tonic's
//! 8 KiB: a full `GetGame` answer is several KB and would otherwise grow
//! its buffer on every call.

use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Bytes each call's decode buffer starts with.
pub const DECODE_BUFFER_BYTES: usize = 1024;

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
        ProstCodec::<T, U>::raw_encoder(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(BufferSettings::new(DECODE_BUFFER_BYTES, YIELD_THRESHOLD))
    }
}
