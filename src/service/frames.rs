//! Answers of a few hundred bytes to 2 KiB go out as HTTP/2 DATA frames
//! small enough to share one write with the connection's other frames.
//!
//! h2 copies a DATA frame shorter than 256 bytes into the connection's
//! write buffer, where the headers, data and trailers of many streams
//! gather and go out in one `writev`. A longer frame is not copied: h2
//! chains it behind the buffer and must write both out before it buffers
//! anything else, so on a busy connection every such answer costs a system
//! call of its own (and the peer a segment of its own to read). `GetGame`'s
//! answers (175 B to 4 KB) were paying that: at ply 40 the compact view
//! (1 KB) ran at 0.7 of the no-op's rate against 1.0 for the 175-byte one
//! at ply 0, the same work on the server but for the bytes.
//!
//! [`small_frames`] splits each data chunk of a response body of at
//! most [`MAX_SPLIT`] bytes into pieces of at most [`PIECE`] bytes (views of
//! the same buffer: nothing is copied here), which h2 then copies and sends
//! together with the rest. Each extra frame costs 9 bytes of header; larger
//! chunks (the full view of a game well under way, a legal-move list of
//! 170 KB, a record) pass unchanged, since a system call per answer is
//! little beside their size. docs/BENCHMARKS.md,
//! "DATA frames under h2's copy threshold", has the measurements.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};

/// Most bytes a piece carries: under h2's 256-byte threshold
/// (`CHAIN_THRESHOLD` in h2's `codec/framed_write.rs`), with room.
pub const PIECE: usize = 240;

/// Largest data chunk that is split, in at most 9 pieces. Past it, the
/// pieces' own costs (a frame each to queue, encode and copy here, and to
/// decode at the client) outweigh the write they save: the full `GetGame`
/// view after 40 plies (3.9 KB, 17 pieces) did no better split than whole.
pub const MAX_SPLIT: usize = 2048;

/// `response` with its body in [`SmallFrames`]: the gRPC server's
/// outermost layer, as `tower::util::MapResponseLayer::new(small_frames)`.
pub fn small_frames<B>(response: http::Response<B>) -> http::Response<SmallFrames<B>> {
    response.map(SmallFrames::new)
}

pin_project_lite::pin_project! {
    /// A body whose data chunks of at most [`MAX_SPLIT`] bytes come out in
    /// pieces of at most [`PIECE`] bytes, in order; everything else
    /// (larger chunks, trailers, errors) as the inner body gives it.
    pub struct SmallFrames<B> {
        #[pin]
        inner: B,
        // What is left of the chunk being split.
        rest: Bytes,
    }
}

impl<B> SmallFrames<B> {
    /// `inner`, split as described.
    pub fn new(inner: B) -> SmallFrames<B> {
        SmallFrames {
            inner,
            rest: Bytes::new(),
        }
    }
}

impl<B> http_body::Body for SmallFrames<B>
where
    B: http_body::Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if !this.rest.is_empty() {
            let piece = this.rest.split_to(this.rest.len().min(PIECE));
            return Poll::Ready(Some(Ok(http_body::Frame::data(piece))));
        }
        match this.inner.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(mut data) if data.len() > PIECE && data.len() <= MAX_SPLIT => {
                    let piece = data.split_to(PIECE);
                    *this.rest = data;
                    Poll::Ready(Some(Ok(http_body::Frame::data(piece))))
                }
                Ok(data) => Poll::Ready(Some(Ok(http_body::Frame::data(data)))),
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            },
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let inner = self.inner.size_hint();
        let rest = self.rest.remaining() as u64;
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body::{Body as _, Frame};
    use http_body_util::{BodyExt as _, StreamBody};

    use super::*;

    /// A body of `chunks` then `trailers`, as a tonic answer is.
    fn body(
        chunks: Vec<Bytes>,
        trailers: Option<http::HeaderMap>,
    ) -> SmallFrames<impl http_body::Body<Data = Bytes, Error = Infallible>> {
        let frames = chunks
            .into_iter()
            .map(Frame::data)
            .chain(trailers.map(Frame::trailers))
            .map(Ok::<_, Infallible>);
        SmallFrames::new(StreamBody::new(tokio_stream::iter(frames)))
    }

    /// Every frame the body gives: data as lengths and bytes, trailers apart.
    async fn frames(
        mut b: SmallFrames<impl http_body::Body<Data = Bytes, Error = Infallible> + Unpin>,
    ) -> (Vec<usize>, Vec<u8>, Option<http::HeaderMap>) {
        let (mut lens, mut bytes, mut trailers) = (Vec::new(), Vec::new(), None);
        while let Some(frame) = b.frame().await {
            match frame.unwrap().into_data() {
                Ok(data) => {
                    lens.push(data.len());
                    bytes.extend_from_slice(&data);
                }
                Err(frame) => trailers = frame.into_trailers().ok(),
            }
        }
        (lens, bytes, trailers)
    }

    fn pattern(n: usize) -> Bytes {
        (0..n)
            .map(|i| (i * 7 % 251) as u8)
            .collect::<Vec<_>>()
            .into()
    }

    #[tokio::test]
    async fn a_chunk_of_a_few_kib_comes_out_in_pieces_under_the_threshold_in_order() {
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        let (lens, bytes, got) = frames(body(vec![pattern(1435)], Some(trailers.clone()))).await;
        assert_eq!(lens, vec![240, 240, 240, 240, 240, 235]);
        assert_eq!(bytes, pattern(1435).to_vec());
        assert_eq!(got, Some(trailers));
    }

    #[tokio::test]
    async fn small_and_large_chunks_pass_unchanged() {
        let chunks = vec![
            pattern(PIECE),
            pattern(7),
            pattern(MAX_SPLIT + 1),
            pattern(MAX_SPLIT),
        ];
        let (lens, bytes, got) = frames(body(chunks.clone(), None)).await;
        let mut expected = vec![PIECE, 7, MAX_SPLIT + 1];
        expected.extend(std::iter::repeat_n(PIECE, MAX_SPLIT / PIECE));
        expected.push(MAX_SPLIT % PIECE);
        assert_eq!(lens, expected);
        assert_eq!(bytes, chunks.concat());
        assert_eq!(got, None);
    }

    #[tokio::test]
    async fn the_size_hint_counts_what_is_left_of_a_split_chunk() {
        let inner = http_body_util::Full::new(pattern(1000));
        let mut b = SmallFrames::new(inner);
        assert_eq!(b.size_hint().exact(), Some(1000));
        let first = b.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first.len(), PIECE);
        assert!(!b.is_end_stream());
        assert_eq!(b.size_hint().exact(), Some(1000 - PIECE as u64));
        let mut left = 1000 - PIECE;
        while let Some(frame) = b.frame().await {
            left -= frame.unwrap().into_data().unwrap().len();
        }
        assert_eq!(left, 0);
        assert!(b.is_end_stream());
    }
}
